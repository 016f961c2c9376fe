// SPDX-License-Identifier: Apache-2.0
// Every allocation of one device over time, stacked as bands (device.allocations, written by
// allocation_pass.cpp): at each moment the live allocations one above the other, the oldest at
// the bottom, so that a band keeps its place until one below it is freed. The allocations the
// data keeps whole are drawn one by one; at the current zoom, those thinner than a pixel join
// one band per colour above them (the level of detail follows the zoom: zoomed in, each is its
// own); above those, the smaller allocations added up per site (one band per site), and on top
// a caching allocator's free cache.
//
// Colour by role, site or library (a menu). Hover: the band's size, role, library, line and
// stack; click: its whole life (onPick). Drag: zoom to the selection; double-click: the whole
// trace. Each pixel column shows the moment within it when the most was live (as the timeline
// does), so that no peak is hidden.

gmt.Allocations = class {
  constructor(trace, device, onPick) {
    this.trace = trace;
    this.device = device;
    this.onPick = onPick;
    const a = device.allocations;
    this.a = a;
    this.res = device.timeline.resolution_ns;
    this.buckets = device.timeline.resident.length;
    const bands = a.bands;
    this.n = bands.start.length;
    this.start = bands.start;
    this.end = bands.end.map((e) => (e < 0 ? Infinity : e));
    this.size = bands.size;
    this.siteOf = bands.site;
    this.roleOf = bands.role.map((r) => a.roles[r]);
    // The module whose forward made each band, where the framework's hooks reported forwards.
    this.moduleOf = bands.module ? bands.module.map((m) => (trace.allocation_modules || [])[m] || "") : [];
    // The bands' ends in time order, for the sweep.
    this.byEnd = Array.from({ length: this.n }, (_, i) => i).sort((x, y) => this.end[x] - this.end[y]);
    // Series come as their changes (bucket, value, bucket, value...): expanded per bucket.
    const expand = (changes) => {
      const values = new Float64Array(this.buckets);
      let at = 0;
      let value = 0;
      for (let k = 0; k < changes.length; k += 2) {
        values.fill(value, at, changes[k]);
        at = changes[k];
        value = changes[k + 1];
      }
      values.fill(value, at);
      return values;
    };
    this.series = a.series.map((x) => ({ site: x.site, role: x.role, blocks: x.blocks, bytes: expand(x.changes) }));
    // Per bucket, only where the segments' lives were too many to keep.
    this.cache = a.cache ? expand(a.cache) : null;
    this.spans = a.segment_spans;
    const byAllocator = (site) => this.site(site).allocator !== undefined;
    this.allocatorBand = this.siteOf.map(byAllocator);
    this.allocatorSeries = this.series.map((x) => x.blocks);
    // The series' totals per bucket, and those of the allocators' blocks among them.
    this.seriesTotal = new Float64Array(this.buckets);
    this.allocatorSeriesTotal = new Float64Array(this.buckets);
    this.series.forEach((x, i) => {
      for (let b = 0; b < this.buckets; b += 1) {
        this.seriesTotal[b] += x.bytes[b];
        if (this.allocatorSeries[i]) this.allocatorSeriesTotal[b] += x.bytes[b];
      }
    });
    // Every change in time order: [time, what (0 a band, 1 a segment), index, +1 or -1].
    const events = [];
    for (let i = 0; i < this.n; i += 1) {
      events.push([this.start[i], 0, i, 1]);
      if (this.end[i] !== Infinity) events.push([this.end[i], 0, i, -1]);
    }
    if (this.spans) {
      for (let i = 0; i < this.spans.start.length; i += 1) {
        events.push([this.spans.start[i], 1, i, 1]);
        if (this.spans.end[i] >= 0) events.push([this.spans.end[i], 1, i, -1]);
      }
    }
    events.sort((x, y) => x[0] - y[0] || x[3] - y[3]);
    this.events = events;
    const first = Math.min(Math.floor(a.first_alloc_ns / this.res) * this.res, (this.buckets - 1) * this.res);
    this.full = [Math.max(first, 0), Math.max(this.buckets * this.res, 1)];
    this.window = this.full.slice();
    this.colourBy = device.timeline.roles && device.timeline.roles.length > 0 ? "role" : "site";
    this.height = 300;
    this.margin = { left: 74, right: 14, top: 10, bottom: 24 };
    this.build();
  }

  site(i) {
    return this.trace.allocation_sites[i] || { line: "(other sites)", library: "other", stack: null };
  }

  // The band's colour key and colour under the current switch.
  key(site, role) {
    if (this.colourBy === "role") return role;
    if (this.colourBy === "library") return this.site(site).library;
    return "#" + site;
  }
  colour(key) {
    if (key === "(free cache)") return gmt.roleColour("allocator_cache");
    if (this.colourBy === "role") return gmt.roleColour(key);
    if (this.colourBy === "library") return gmt.libraryColour(key);
    // A site (a call stack; several may share their allocating line): hues spread by the
    // golden angle, so that sites made one after the other differ.
    const index = Number(key.slice(1));
    return index === 0 ? "hsl(0,0%,75%)" : "hsl(" + ((index * 137.508) % 360).toFixed(1) + ",60%,62%)";
  }

  // A CSS colour as the 32-bit RGBA pixel of an ImageData (little-endian: ABGR).
  static rgba(css) {
    if (!gmt.Allocations.probe) {
      const canvas = document.createElement("canvas");
      canvas.width = 1;
      canvas.height = 1;
      gmt.Allocations.probe = canvas.getContext("2d", { willReadFrequently: true });
    }
    const probe = gmt.Allocations.probe;
    probe.clearRect(0, 0, 1, 1);
    probe.fillStyle = css;
    probe.fillRect(0, 0, 1, 1);
    const [r, g, b] = probe.getImageData(0, 0, 1, 1).data;
    return ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
  }

  // Each kept band's colour key under the current switch, computed once per switch.
  // A CSS colour as the 32-bit RGBA pixel of an ImageData (little-endian: ABGR).
  static rgba(css) {
    if (!gmt.Allocations.probe) {
      const canvas = document.createElement("canvas");
      canvas.width = 1;
      canvas.height = 1;
      gmt.Allocations.probe = canvas.getContext("2d", { willReadFrequently: true });
    }
    const probe = gmt.Allocations.probe;
    probe.clearRect(0, 0, 1, 1);
    probe.fillStyle = css;
    probe.fillRect(0, 0, 1, 1);
    const [r, g, b] = probe.getImageData(0, 0, 1, 1).data;
    return ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
  }

  // Each kept band's colour key under the current switch, as [index per band, the keys],
  // computed once per switch.
  bandKeys() {
    if (!this.keysBy || this.keysBy.by !== this.colourBy) {
      const index = new Int32Array(this.n);
      const names = [];
      const seen = new Map();
      for (let i = 0; i < this.n; i += 1) {
        const key = this.key(this.siteOf[i], this.roleOf[i]);
        let k = seen.get(key);
        if (k === undefined) { k = names.length; names.push(key); seen.set(key, k); }
        index[i] = k;
      }
      this.keysBy = { by: this.colourBy, index, names };
    }
    return [this.keysBy.index, this.keysBy.names];
  }

  build() {
    this.root = gmt.el("div", { class: "allocations", "data-trace": this.trace.index, "data-device": this.device.device });
    this.plot = gmt.el("canvas", { class: "plot" });
    this.overlay = gmt.el("canvas", { class: "overlay", tabindex: 0 });
    this.tip = gmt.el("div", { class: "tooltip band-tip", hidden: "" });
    this.frame = gmt.el("div", { class: "canvas-frame" }, this.plot, this.overlay, this.tip);
    this.frame.style.height = this.height + "px";
    const menu = gmt.el("select", { class: "colour-by" },
                        ["role", "site", "library"].map((v) => gmt.el("option", { value: v }, "coloured by " + v)));
    menu.value = this.colourBy;
    menu.addEventListener("change", () => {
      this.colourBy = menu.value;
      this.draw();
    });
    const reset = gmt.el("button", { type: "button" }, "whole trace");
    reset.addEventListener("click", () => this.zoom(this.full[0], this.full[1]));
    const a = this.a;
    const note = a.threshold_bytes > 0
      ? "allocations of " + gmt.bytes(a.threshold_bytes) + " or more drawn one by one (" + a.kept +
        "); " + a.small_count + " smaller ones added up per site"
      : "every allocation drawn one by one (" + a.kept + ")";
    this.root.append(gmt.el("div", { class: "toolbar" }, reset, menu,
                            gmt.el("span", { class: "help" }, note + " \u00b7 drag: zoom \u00b7 double-click: whole trace \u00b7 click: an allocation's life")),
                     this.frame);
    this.legend = gmt.el("div", { class: "legend" });
    this.root.append(this.legend);
    this.listen();
  }

  width() { return Math.max(this.frame.clientWidth, 300); }
  plotWidth() { return this.width() - this.margin.left - this.margin.right; }
  plotHeight() { return this.height - this.margin.top - this.margin.bottom; }
  xOf(t) {
    const [t0, t1] = this.window;
    return this.margin.left + ((t - t0) / (t1 - t0)) * this.plotWidth();
  }
  timeAt(x) {
    const [t0, t1] = this.window;
    return t0 + ((x - this.margin.left) / this.plotWidth()) * (t1 - t0);
  }
  bucketAt(t) { return Math.min(Math.max(Math.floor(t / this.res), 0), this.buckets - 1); }

  zoom(t0, t1) {
    const span = Math.max(t1 - t0, Math.min(this.res, this.full[1] - this.full[0]));
    const start = Math.max(Math.min(t0, this.full[1] - span), this.full[0]);
    this.window = [start, start + span];
    this.draw();
  }

  // The state after every change up to time t, from `state` (at an earlier time) or from the
  // start: {at (events applied), bands, allocator (its blocks' bytes), reserved}.
  advance(state, t) {
    const st = state || { at: 0, bands: 0, allocator: 0, reserved: 0 };
    const ev = this.events;
    while (st.at < ev.length && ev[st.at][0] <= t) {
      const [, what, i, sign] = ev[st.at];
      if (what === 0) {
        st.bands += sign * this.size[i];
        if (this.allocatorBand[i]) st.allocator += sign * this.size[i];
      } else {
        st.reserved += sign * this.spans.size[i];
      }
      st.at += 1;
    }
    return st;
  }

  // What the series and the cache hold at time t in state st: [series total, cache].
  others(st, t) {
    const b = this.bucketAt(t);
    const cache = this.cache ? this.cache[b] : Math.max(st.reserved - st.allocator - this.allocatorSeriesTotal[b], 0);
    return [this.seriesTotal[b], cache];
  }

  // Per pixel column, the moment (a change's time, all changes at it applied) when the most
  // was live in it; a column with no change keeps the state before it. [when, cache] arrays.
  columns() {
    const pw = Math.ceil(this.plotWidth());
    const [t0, t1] = this.window;
    const best = new Float64Array(pw).fill(-1);
    const when = new Float64Array(pw).fill(NaN);
    const cacheOf = new Float64Array(pw);
    // A column that holds a bucket's moment (when the device held the most in the bucket: the
    // series are what was live then) shows that moment, the largest of them: there the stack
    // adds up exactly. Others show the change after which the most was live in them.
    const chosen = new Uint8Array(pw);
    const st = this.advance(null, t0);
    const consider = (t, moment) => {
      const c = Math.min(Math.max(Math.floor(this.xOf(t) - this.margin.left), 0), pw - 1);
      const [series, cache] = this.others(st, t);
      const total = st.bands + series + cache;
      if (moment ? !chosen[c] || total > best[c] : !chosen[c] && total > best[c]) {
        best[c] = total;
        when[c] = t;
        cacheOf[c] = cache;
        if (moment) chosen[c] = 1;
      }
    };
    consider(t0, false);
    const ev = this.events;
    const moments = this.a.moments || [];
    let b = this.bucketAt(t0);
    const lastBucket = this.bucketAt(t1);
    while (true) {
      const te = st.at < ev.length ? ev[st.at][0] : Infinity;
      const tm = b <= lastBucket && b < moments.length ? moments[b] : Infinity;
      if (Math.min(te, tm) > t1) break;
      if (tm <= te) {
        this.advance(st, tm);
        if (tm >= t0) consider(tm, true);
        b += 1;
      } else {
        this.advance(st, te);
        consider(te, false);
      }
    }
    // Columns with no change: the state carried, at the column's own time (the series change
    // with their buckets).
    let carried = t0;
    const back = this.advance(null, t0);
    for (let c = 0; c < pw; c += 1) {
      if (Number.isNaN(when[c])) {
        when[c] = Math.max(carried, this.timeAt(this.margin.left + c + 0.5));
        this.advance(back, when[c]);
        const [series, cache] = this.others(back, when[c]);
        cacheOf[c] = cache;
        best[c] = back.bands + series + cache;
      } else {
        this.advance(back, when[c]);
      }
      carried = when[c];
    }
    return [when, cacheOf, best];
  }

  // The live bands at time t, bottom first (by start).
  liveAt(t) {
    const live = [];
    for (let i = 0; i < this.n && this.start[i] <= t; i += 1) if (this.end[i] > t) live.push(i);
    return live;
  }

  // The stack drawn at time t, bottom first: [{kind, index, bytes, key}], the bands thick
  // enough at `scale` pixels per byte, the thin ones by key, the series, then the cache.
  stackAt(t, scale, live, cache) {
    const b = this.bucketAt(t);
    const out = [];
    const thin = new Map();
    for (const i of live) {
      const key = this.key(this.siteOf[i], this.roleOf[i]);
      if (this.size[i] * scale >= 1) {
        out.push({ kind: "band", index: i, bytes: this.size[i], key });
      } else {
        const group = thin.get(key) || { kind: "thin", bytes: 0, count: 0, key, index: i };
        group.bytes += this.size[i];
        group.count += 1;
        thin.set(key, group);
      }
    }
    for (const group of thin.values()) out.push(group);
    this.series.forEach((s, i) => {
      if (s.bytes[b] > 0) out.push({ kind: "series", index: i, bytes: s.bytes[b], key: this.key(s.site, s.role) });
    });
    // The allocators' free cache on top: what they reserve and no block holds.
    if (cache > 0) out.push({ kind: "cache", bytes: cache, key: this.colourBy === "role" ? "allocator_cache" : "(free cache)" });
    return out;
  }

  draw() {
    const started = performance.now();
    const ctx = gmt.Timeline.prototype.resize.call(this, this.plot);
    const m = this.margin;
    const pw = this.plotWidth();
    const ph = this.plotHeight();
    ctx.clearRect(0, 0, this.width(), this.height);
    const [when, cacheOf, totals] = this.columns();
    // The scale: the most any column holds.
    let drawnMax = 0;
    for (const total of totals) drawnMax = Math.max(drawnMax, total);
    const ymax = Math.max(drawnMax, 1) * 1.08;
    this.ymax = ymax;
    const scale = ph / ymax;
    this.when = when;
    this.cacheOf = cacheOf;
    // Drawn pixel by pixel into an image: a column's items fill spans of it, so the work is the
    // plot's pixels and the live bands, whatever the number of rectangles (a canvas call per
    // rectangle cost 90 ms a redraw at 10 M events).
    const ratio = window.devicePixelRatio || 1;
    const iw = Math.max(Math.round(pw * ratio), 1);
    const ih = Math.max(Math.round(ph * ratio), 1);
    const image = ctx.createImageData(iw, ih);
    const pixels = new Uint32Array(image.data.buffer);
    const colours = new Map();
    const colourOf = (key) => {
      let c = colours.get(key);
      if (c === undefined) { c = gmt.Allocations.rgba(this.colour(key)); colours.set(key, c); }
      return c;
    };
    const hairline = (rgba) => {
      // Halfway to white, as memory_viz separates its bands.
      const mix = (shift) => ((((rgba >>> shift) & 255) + 255) >>> 1) << shift;
      return (mix(0) | mix(8) | mix(16) | (255 << 24)) >>> 0;
    };
    const [keyOf, keyNames] = this.bandKeys();
    const thin = new Float64Array(keyNames.length);
    const touched = [];
    const cacheColour = colourOf(this.colourBy === "role" ? "allocator_cache" : "(free cache)");
    const hairlines = new Map();
    let liveNow = [];
    let si = 0;
    for (let c = 0; c < when.length; c += 1) {
      const t = when[c];
      while (si < this.n && this.start[si] <= t) { liveNow.push(si); si += 1; }
      let k = 0;
      for (let j = 0; j < liveNow.length; j += 1) {
        const i = liveNow[j];
        if (this.end[i] > t) { liveNow[k] = i; k += 1; }
      }
      liveNow.length = k;
      const x0 = Math.round(c * ratio);
      const x1 = Math.min(Math.round((c + 1) * ratio), iw);
      let below = 0;  // bytes drawn under the next item
      const fill = (bytes, rgba, band) => {
        const ya = Math.round(ih - (below + bytes) * scale * ratio);
        const yb = Math.round(ih - below * scale * ratio);
        below += bytes;
        const top = Math.max(ya, 0);
        for (let y = top; y < yb; y += 1) {
          let line = rgba;
          if (band && y === top && yb - ya >= 4 * ratio) {
            line = hairlines.get(rgba);
            if (line === undefined) { line = hairline(rgba); hairlines.set(rgba, line); }
          }
          pixels.fill(line, y * iw + x0, y * iw + x1);
        }
      };
      for (const i of liveNow) {
        if (this.size[i] * scale >= 1) {
          fill(this.size[i], colourOf(keyNames[keyOf[i]]), true);
        } else {
          if (thin[keyOf[i]] === 0) touched.push(keyOf[i]);
          thin[keyOf[i]] += this.size[i];
        }
      }
      for (const key of touched) {
        fill(thin[key], colourOf(keyNames[key]), false);
        thin[key] = 0;
      }
      touched.length = 0;
      const b = this.bucketAt(t);
      for (const x of this.series) if (x.bytes[b] > 0) fill(x.bytes[b], colourOf(this.key(x.site, x.role)), false);
      if (cacheOf[c] > 0) fill(cacheOf[c], cacheColour, false);
    }
    ctx.putImageData(image, Math.round(m.left * ratio), Math.round(m.top * ratio));
    // The legend: the colours drawn in this view, at most 16 of them.
    const name = (key) => (this.colourBy === "site" && key.startsWith("#") ? this.site(Number(key.slice(1))).line : key);
    this.legend.replaceChildren(...[...colours.keys()].slice(0, 16).map((key) =>
      gmt.el("span", { class: "key", "data-layer": name(key) }, gmt.el("i", { style: "background:" + this.colour(key) }), name(key))));
    gmt.Timeline.prototype.drawAxes.call(this, ctx, (v) => m.top + ph - (v / ymax) * ph, ymax);
    this.root.dataset.drawnMaxBytes = String(drawnMax);
    this.root.dataset.drawMs = (performance.now() - started).toFixed(1);
    this.drawOverlay();
  }

  drawOverlay() {
    const ctx = gmt.Timeline.prototype.resize.call(this, this.overlay);
    ctx.clearRect(0, 0, this.width(), this.height);
    if (this.selection) {
      const [xa, xb] = this.selection;
      ctx.fillStyle = "rgba(52, 152, 219, 0.2)";
      ctx.fillRect(Math.min(xa, xb), this.margin.top, Math.abs(xb - xa), this.plotHeight());
    }
    if (this.picked !== undefined && this.picked !== null) {
      // The picked allocation's life, outlined at the bottom edge.
      const i = this.picked;
      const xa = Math.max(this.xOf(this.start[i]), this.margin.left);
      const xb = Math.min(this.xOf(Math.min(this.end[i], this.full[1])), this.margin.left + this.plotWidth());
      ctx.fillStyle = "#c0392b";
      ctx.fillRect(xa, this.margin.top + this.plotHeight() - 3, Math.max(xb - xa, 1), 3);
    }
  }

  // The item under (x, y) of the canvas: {item, time} or null.
  itemAt(x, y) {
    const c = Math.floor(x - this.margin.left);
    if (!this.when || c < 0 || c >= this.when.length) return null;
    const scale = this.plotHeight() / this.ymax;
    let bottom = this.margin.top + this.plotHeight();
    for (const item of this.stackAt(this.when[c], scale, this.liveAt(this.when[c]), this.cacheOf[c])) {
      const h = item.bytes * scale;
      if (y <= bottom && y >= bottom - h) return { item, time: this.when[c] };
      bottom -= h;
    }
    return null;
  }

  // The text of the tooltip for an item.
  describe(hit) {
    const item = hit.item;
    const rows = [gmt.el("div", { class: "tip-time" }, "at " + gmt.duration(hit.time))];
    if (item.kind === "cache") {
      rows.push(gmt.el("div", null, gmt.el("b", { class: "tip-bytes", "data-bytes": item.bytes }, gmt.bytes(item.bytes)),
                       " the caching allocators' free cache"));
      return rows;
    }
    const siteIndex = item.kind === "series" ? this.series[item.index].site : this.siteOf[item.index];
    const site = this.site(siteIndex);
    const role = item.kind === "series" ? this.series[item.index].role : this.roleOf[item.index];
    const what = item.kind === "band" ? "one allocation"
      : item.kind === "thin" ? item.count + " allocations, each under a pixel here"
      : "smaller allocations of this site, added up";
    rows.push(gmt.el("div", null, gmt.el("b", { class: "tip-bytes", "data-bytes": item.bytes }, gmt.bytes(item.bytes)),
                     " (" + item.bytes + " bytes) \u00b7 " + what));
    const module = item.kind === "band" ? this.moduleOf[item.index] : "";
    rows.push(gmt.el("div", { class: "tip-role" }, "role " + role + (module ? " \u00b7 module " + module : "") +
                     " \u00b7 " + site.library));
    rows.push(gmt.el("div", { class: "tip-line" }, site.line));
    if (item.kind === "band") {
      rows.push(gmt.el("div", null, "made at " + gmt.duration(this.start[item.index]) + ", " +
                       (this.end[item.index] === Infinity ? "never freed" : "freed at " + gmt.duration(this.end[item.index]))));
    }
    const stack = site.stack !== null && site.stack !== undefined ? this.trace.stacks[site.stack] : null;
    if (stack) {
      for (const [fn, where] of stack.frames.slice(0, 6)) {
        rows.push(gmt.el("div", { class: "tip-frame" }, fn + (where ? " " + where : "")));
      }
    }
    return rows;
  }

  // Where kept allocation i is drawn, in the viewport's coordinates (the middle of its band in
  // the first column that draws it whole), or null: for whoever drives the page (the tests).
  where(i) {
    if (!this.when) return null;
    const scale = this.plotHeight() / this.ymax;
    const rect = this.overlay.getBoundingClientRect();
    for (let c = 0; c < this.when.length; c += 1) {
      const t = this.when[c];
      if (t < this.start[i] || t >= this.end[i]) continue;
      let bottom = this.margin.top + this.plotHeight();
      for (const item of this.stackAt(t, scale, this.liveAt(t), this.cacheOf[c])) {
        const h = item.bytes * scale;
        if (item.kind === "band" && item.index === i && h >= 2) {
          return { x: rect.left + this.margin.left + c + 0.5, y: rect.top + bottom - h / 2 };
        }
        bottom -= h;
      }
    }
    return null;
  }

  // Everything the page knows of one kept allocation.
  life(i) {
    const site = this.site(this.siteOf[i]);
    const end = this.end[i];
    const runs = this.trace.phase_runs.filter((r) => r.start_ns <= this.start[i] && r.end_ns >= this.start[i])
      .sort((x, y) => x.start_ns - y.start_ns).map((r) => r.name);
    return {
      index: i, bytes: this.size[i], role: this.roleOf[i], module: this.moduleOf[i] || "", library: site.library, line: site.line,
      start_ns: this.start[i], end_ns: end === Infinity ? null : end, phases: runs,
      stack: site.stack !== null && site.stack !== undefined ? this.trace.stacks[site.stack] : null,
    };
  }

  listen() {
    const pointer = (e) => {
      const rect = this.overlay.getBoundingClientRect();
      return [e.clientX - rect.left, e.clientY - rect.top];
    };
    this.overlay.addEventListener("mousedown", (e) => {
      this.drag = { x: pointer(e)[0] };
    });
    this.overlay.addEventListener("mousemove", (e) => {
      const [x, y] = pointer(e);
      if (this.drag && Math.abs(x - this.drag.x) > 4) {
        this.selection = [this.drag.x, x];
        this.drawOverlay();
      }
      const hit = this.itemAt(x, y);
      if (!hit) {
        this.tip.hidden = true;
        return;
      }
      this.tip.replaceChildren(...this.describe(hit));
      this.tip.hidden = false;
      this.tip.style.left = Math.max(x + 14 + 260 > this.width() ? x - 14 - 260 : x + 14, 0) + "px";
      this.tip.style.top = Math.max(y - 40, 0) + "px";
    });
    this.overlay.addEventListener("mouseup", (e) => {
      const [x, y] = pointer(e);
      const drag = this.drag;
      this.drag = null;
      this.selection = null;
      if (!drag) return;
      if (Math.abs(x - drag.x) > 4) {
        this.zoom(this.timeAt(Math.min(x, drag.x)), this.timeAt(Math.max(x, drag.x)));
        return;
      }
      const hit = this.itemAt(x, y);
      this.picked = hit && hit.item.kind === "band" ? hit.item.index : null;
      this.drawOverlay();
      if (hit) this.onPick(this, hit);
    });
    this.overlay.addEventListener("mouseleave", () => {
      this.tip.hidden = true;
      this.selection = null;
      this.drag = null;
      this.drawOverlay();
    });
    this.overlay.addEventListener("dblclick", () => this.zoom(this.full[0], this.full[1]));
  }
};
