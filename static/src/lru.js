// A small weighted LRU cache of promises (snapshot texts, source maps, diffs): entries are
// evicted least recently used first once their total weight passes the budget.

export class LruCache {
  /**
   * @param {number} budget total weight kept
   * @param {(value: any) => number} weigh weight of a resolved value
   */
  constructor(budget, weigh = () => 1) {
    this.budget = budget;
    this.weigh = weigh;
    /** @type {Map<any, {promise: Promise<any>, weight: number}>} */
    this.items = new Map();
    this.total = 0;
  }

  /** The cached promise for `key`, or `load()`'s (a rejected load is forgotten). */
  get(key, load) {
    const hit = this.items.get(key);
    if (hit) {
      this.items.delete(key);
      this.items.set(key, hit);
      return hit.promise;
    }
    const item = { promise: null, weight: 0 };
    item.promise = Promise.resolve().then(load).then((value) => {
      if (this.items.get(key) === item) {
        item.weight = this.weigh(value);
        this.total += item.weight;
        this.evict(key);
      }
      return value;
    }, (err) => {
      if (this.items.get(key) === item) this.items.delete(key);
      throw err;
    });
    this.items.set(key, item);
    return item.promise;
  }

  /** Seed a value that arrived with another request. */
  put(key, value) {
    if (this.items.has(key)) return;
    const weight = this.weigh(value);
    this.items.set(key, { promise: Promise.resolve(value), weight });
    this.total += weight;
    this.evict(key);
  }

  has(key) {
    return this.items.has(key);
  }

  evict(keep) {
    for (const [key, item] of this.items) {
      if (this.total <= this.budget) break;
      if (key === keep) continue;
      this.items.delete(key);
      this.total -= item.weight;
    }
  }
}
