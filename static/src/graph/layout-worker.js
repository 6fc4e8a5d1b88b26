// The Graph view's layout Web Worker: elkjs's own worker (its layered algorithm), answering
// the messages elkjs's API (graph/layout.js) posts.
import "elkjs/lib/elk-worker.min.js";
