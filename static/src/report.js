// Entry point of the static report (`explorer report`): the session page, its data read
// from the file instead of a server (report-data.js runs first and answers its requests).
import "./report-data.js";
import "./main.js";
