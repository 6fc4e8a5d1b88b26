// Line diff (Myers O(ND) over interned lines, common prefix/suffix trimmed first); the
// snapshots' diff (relaydiff.js) runs it over line shapes.
// Pure functions: used inside the diff Web Worker, importable by tests and the main thread.

/** Beyond this edit distance Myers gives up and the middle is anchored on unique lines. */
const MAX_EDIT_DISTANCE = 400;

/** Split into lines that keep their "\n", plus each line's start offset. */
export function splitLines(text) {
  const lines = [];
  const starts = [];
  let pos = 0;
  while (pos < text.length) {
    const nl = text.indexOf("\n", pos);
    const end = nl < 0 ? text.length : nl + 1;
    starts.push(pos);
    lines.push(text.slice(pos, end));
    pos = end;
  }
  starts.push(text.length);
  return { lines, starts };
}

function intern(linesA, linesB) {
  const ids = new Map();
  const id = (line) => {
    let v = ids.get(line);
    if (v === undefined) {
      v = ids.size;
      ids.set(line, v);
    }
    return v;
  };
  return [Int32Array.from(linesA, id), Int32Array.from(linesB, id)];
}

/**
 * Edit script between two int arrays as runs: [{op: "=", a, b, n} | {op: "-", a, n} | {op: "+", b, n}].
 */
export function diffSequences(A, B) {
  const runs = [];
  diffRange(A, B, 0, 0, runs);
  return mergeRuns(runs);
}

/** Diff A against B (subarrays starting at offsets a0/b0 of the originals) into `runs`. */
function diffRange(A, B, a0, b0, runs) {
  let pre = 0;
  while (pre < A.length && pre < B.length && A[pre] === B[pre]) pre++;
  let suf = 0;
  while (suf < A.length - pre && suf < B.length - pre &&
         A[A.length - 1 - suf] === B[B.length - 1 - suf]) suf++;
  if (pre) runs.push({ op: "=", a: a0, b: b0, n: pre });
  const midA = A.subarray(pre, A.length - suf);
  const midB = B.subarray(pre, B.length - suf);
  const mid = sharesAny(midA, midB) ? (myers(midA, midB) ?? patience(midA, midB))
    : replaceAll(midA, midB);
  for (const r of mid) runs.push(...(r.sub ? r.sub(a0 + pre, b0 + pre) : [shift(r, a0 + pre, b0 + pre)]));
  if (suf) runs.push({ op: "=", a: a0 + A.length - suf, b: b0 + B.length - suf, n: suf });
}

/** Whether two id arrays have any element in common (ids are small non-negative ints). */
function sharesAny(A, B) {
  if (!A.length || !B.length) return false;
  let max = 0;
  for (const v of A) if (v > max) max = v;
  const seen = new Uint8Array(max + 1);
  for (const v of A) seen[v] = 1;
  for (const v of B) if (v <= max && seen[v]) return true;
  return false;
}

function replaceAll(A, B) {
  return [{ op: "-", a: 0, b: 0, n: A.length }, { op: "+", a: A.length, b: 0, n: B.length }];
}

function shift(r, da, db) {
  return { ...r, a: r.a + da, b: r.b + db };
}

/** Patience anchoring: lines unique on both sides, longest increasing run, recurse between. */
function patience(A, B) {
  const anchors = uniqueCommonLis(A, B);
  if (!anchors.length) return replaceAll(A, B);
  const out = [];
  let pa = 0;
  let pb = 0;
  for (const [ia, ib] of [...anchors, [A.length, B.length]]) {
    const segA = A.subarray(pa, ia);
    const segB = B.subarray(pb, ib);
    const sa = pa;
    const sb = pb;
    out.push({ sub: (da, db) => { const rs = []; diffRange(segA, segB, da + sa, db + sb, rs); return rs; } });
    if (ia < A.length) out.push({ op: "=", a: ia, b: ib, n: 1 });
    pa = ia + 1;
    pb = ib + 1;
  }
  return out;
}

function uniqueCommonLis(A, B) {
  const count = (arr) => {
    const m = new Map();
    arr.forEach((v, i) => m.set(v, m.has(v) ? -1 : i));
    return m;
  };
  const ua = count(A);
  const ub = count(B);
  const pairs = [];
  for (const [v, ia] of ua) {
    const ib = ub.get(v);
    if (ia >= 0 && ib !== undefined && ib >= 0) pairs.push([ia, ib]);
  }
  pairs.sort((x, y) => x[0] - y[0]);
  return longestIncreasing(pairs);
}

/** Longest subsequence of pairs (sorted by a) with increasing b (patience sorting). */
function longestIncreasing(pairs) {
  const tails = [];
  const prev = new Array(pairs.length);
  for (let i = 0; i < pairs.length; i++) {
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (pairs[tails[mid]][1] < pairs[i][1]) lo = mid + 1;
      else hi = mid;
    }
    prev[i] = lo > 0 ? tails[lo - 1] : -1;
    tails[lo] = i;
  }
  const out = [];
  for (let i = tails.length ? tails[tails.length - 1] : -1; i >= 0; i = prev[i]) out.push(pairs[i]);
  return out.reverse();
}

/** Myers O(ND); null when the edit distance exceeds the cap (the caller anchors instead). */
function myers(A, B) {
  const n = A.length;
  const m = B.length;
  if (!n && !m) return [];
  if (!n) return [{ op: "+", a: 0, b: 0, n: m }];
  if (!m) return [{ op: "-", a: 0, b: 0, n }];
  const max = Math.min(n + m, MAX_EDIT_DISTANCE);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      const down = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]);
      let x = down ? v[offset + k + 1] : v[offset + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && A[x] === B[y]) { x++; y++; }
      v[offset + k] = x;
      if (x >= n && y >= m) return backtrack(trace, offset, n, m);
    }
  }
  return null;
}

function backtrack(trace, offset, n, m) {
  const runs = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d >= 0; d--) {
    const v = trace[d];
    const k = x - y;
    const down = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]);
    const prevK = down ? k + 1 : k - 1;
    const prevX = d === 0 ? 0 : v[offset + prevK];
    const prevY = prevX - prevK;
    const startX = d === 0 ? 0 : (down ? prevX : prevX + 1);
    const startY = d === 0 ? 0 : (down ? prevY + 1 : prevY);
    if (x > startX) runs.push({ op: "=", a: startX, b: startY, n: x - startX });
    if (d > 0) runs.push(down ? { op: "+", a: prevX, b: prevY, n: 1 }
      : { op: "-", a: prevX, b: prevY, n: 1 });
    x = prevX;
    y = prevY;
  }
  return runs.reverse();
}

function mergeRuns(runs) {
  const out = [];
  for (const r of runs) {
    if (!r.n) continue;
    const last = out[out.length - 1];
    if (last && last.op === r.op && last.a + (r.op === "+" ? 0 : last.n) === r.a &&
        last.b + (r.op === "-" ? 0 : last.n) === r.b) {
      last.n += r.n;
    } else {
      out.push({ ...r });
    }
  }
  return out;
}

/** Unified line ops: [{op: "=" | "-" | "+", text}] (text without its newline). */
export function unifiedLines(a, b) {
  const sa = splitLines(a);
  const sb = splitLines(b);
  const [A, B] = intern(sa.lines, sb.lines);
  const out = [];
  for (const r of diffSequences(A, B)) {
    for (let i = 0; i < r.n; i++) {
      const line = r.op === "+" ? sb.lines[r.b + i] : sa.lines[r.a + i];
      out.push({ op: r.op, text: line.replace(/\n$/, "") });
    }
  }
  return out;
}
