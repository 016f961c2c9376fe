// SPDX-License-Identifier: Apache-2.0
// The timeline of one device: device-resident bytes stacked by role (where the trace recorded
// roles; a menu switches) or by owning library, the sampled
// views as lines, phase runs as bands above the plot, the peak and each failed allocation as
// markers. Wheel: zoom around the pointer; drag: zoom to the selection; shift+drag: pan;
// double-click: the whole trace; click: what was live at that moment (onMoment).
//
// Each bucket of the data holds the most that was live during it and the split by library (and
// by role) at the moment that most was reached, so drawing every bucket as a bar (several may share a
// pixel: the tallest shows) never hides a peak.

gmt.viewStyles = {
  nvml_process: { colour: "#c0392b", label: "NVML, this process", dash: [6, 3] },
  driver_used: { colour: "#7d3c98", label: "driver used (cuMemGetInfo)", dash: [2, 2] },
  framework_reserved: { colour: "#1f618d", label: "framework reserved", dash: [] },
  framework_allocated: { colour: "#117a65", label: "framework allocated", dash: [] },
};

gmt.Timeline = class {
  constructor(trace, device, onMoment) {
    this.trace = trace;
    this.device = device;
    this.onMoment = onMoment;
    const tl = device.timeline;
    this.res = tl.resolution_ns;
    this.buckets = tl.resident.length;
    this.stacks = { role: tl.roles || [], library: tl.libraries };
    this.by = this.stacks.role.length > 0 ? "role" : "library";
    this.layers = this.stacks[this.by];
    // The axis starts where the device's first allocation does: start-up before it is folded
    // (the times stay those since the process started, as the reports print them).
    const first = device.allocations ? device.allocations.first_alloc_ns : 0;
    const start = Math.min(Math.floor(first / this.res) * this.res, (this.buckets - 1) * this.res);
    this.full = [Math.max(start, 0), Math.max(this.buckets * this.res, 1)];
    this.window = this.full.slice();
    this.ooms = trace.ooms.filter((o) => o.device === device.device);
    this.views = [];
    for (const [name, points] of Object.entries(tl.views)) {
      if (!gmt.viewStyles[name] || points.length === 0) continue;
      this.views.push({ name, points, byBucket: new Map(points) });
    }
    this.runs = gmt.Timeline.laneRuns(trace.phase_runs);
    this.lanes = this.runs.reduce((most, r) => Math.max(most, r.lane + 1), 0);
    this.margin = { left: 74, right: 14, top: 20 + this.lanes * 13, bottom: 24 };
    this.height = 280 + this.lanes * 13;
    this.hoverX = null;
    this.selection = null;
    this.selected = null;
    this.build();
  }

  // Phase runs with the lane (nesting depth on their thread) each is drawn in; at most 4 lanes.
  static laneRuns(runs) {
    const sorted = runs.slice().sort((a, b) => a.start_ns - b.start_ns || b.end_ns - a.end_ns);
    const open = new Map();  // thread -> ends of the runs containing the current one
    return sorted.map((r) => {
      const stack = open.get(r.thread) || [];
      while (stack.length > 0 && stack[stack.length - 1] <= r.start_ns) stack.pop();
      const lane = Math.min(stack.length, 3);
      stack.push(r.end_ns);
      open.set(r.thread, stack);
      return Object.assign({ lane }, r);
    });
  }

  build() {
    const d = this.device;
    this.root = gmt.el("div", {
      class: "chart",
      "data-trace": this.trace.index,
      "data-device": d.device,
      "data-model-peak-bytes": d.peak_bytes,
    });
    this.plot = gmt.el("canvas", { class: "plot" });
    this.overlay = gmt.el("canvas", { class: "overlay", tabindex: 0 });
    this.tip = gmt.el("div", { class: "tooltip", hidden: "" });
    this.frame = gmt.el("div", { class: "canvas-frame" }, this.plot, this.overlay, this.tip);
    this.frame.style.height = this.height + "px";
    this.legend = gmt.el("div", { class: "legend" });
    this.fillLegend();
    const reset = gmt.el("button", { type: "button" }, "whole trace");
    reset.addEventListener("click", () => this.zoom(this.full[0], this.full[1]));
    const help = gmt.el("span", { class: "help" },
                        "wheel: zoom \u00b7 drag: zoom to selection \u00b7 shift+drag: pan \u00b7 " +
                        "double-click: whole trace \u00b7 click: what was live then");
    const toolbar = gmt.el("div", { class: "toolbar" }, reset);
    if (this.stacks.role.length > 0) {
      const menu = gmt.el("select", { class: "stack-by" },
                          gmt.el("option", { value: "role" }, "stacked by role"),
                          gmt.el("option", { value: "library" }, "stacked by library"));
      menu.addEventListener("change", () => this.stackBy(menu.value));
      toolbar.append(menu);
    }
    toolbar.append(help);
    this.root.append(toolbar, this.frame, this.legend);
    this.listen();
  }

  // Stacks the layers by "role" or "library".
  stackBy(by) {
    this.by = by;
    this.layers = this.stacks[by];
    this.root.dataset.stackBy = by;
    this.fillLegend();
    this.draw();
  }

  colour(name) {
    return this.by === "role" ? gmt.roleColour(name) : gmt.libraryColour(name);
  }

  fillLegend() {
    const legend = this.legend;
    legend.replaceChildren();
    this.root.dataset.stackBy = this.by;
    for (const layer of this.layers) {
      legend.append(gmt.el("span", { class: "key", "data-layer": layer.name },
                           gmt.el("i", { style: "background:" + this.colour(layer.name) }),
                           layer.name));
    }
    for (const v of this.views) {
      const s = gmt.viewStyles[v.name];
      legend.append(gmt.el("span", { class: "key" },
                           gmt.el("i", { class: "line", style: "border-color:" + s.colour }),
                           s.label));
    }
    legend.append(gmt.el("span", { class: "key" }, gmt.el("b", { class: "peak-mark" }, "\u25b2"),
                         "peak"));
    if (this.ooms.length > 0) {
      legend.append(gmt.el("span", { class: "key" }, gmt.el("b", { class: "oom-mark" }, "\u2715"),
                           "failed allocation"));
    }
  }

  width() {
    return Math.max(this.frame.clientWidth, 300);
  }
  plotWidth() {
    return this.width() - this.margin.left - this.margin.right;
  }
  plotHeight() {
    return this.height - this.margin.top - this.margin.bottom;
  }
  // x in CSS pixels of the canvas for time t (ns since the trace started), and back.
  xOf(t) {
    const [t0, t1] = this.window;
    return this.margin.left + ((t - t0) / (t1 - t0)) * this.plotWidth();
  }
  timeAt(x) {
    const [t0, t1] = this.window;
    return t0 + ((x - this.margin.left) / this.plotWidth()) * (t1 - t0);
  }
  bucketAt(t) {
    return Math.min(Math.max(Math.floor(t / this.res), 0), this.buckets - 1);
  }
  // The bucket with the most live among those under the pixel column of x ([n, n + 1) in CSS
  // pixels): zoomed out, a column spans several buckets, and the tallest is the one drawn.
  bucketAtPixel(x) {
    const column = Math.floor(x);
    const first = this.bucketAt(this.timeAt(column));
    const last = this.bucketAt(this.timeAt(column + 1) - 1);
    const resident = this.device.timeline.resident;
    let best = first;
    for (let b = first + 1; b <= last; b += 1) if (resident[b] > resident[best]) best = b;
    return best;
  }

  resize(canvas) {
    const ratio = window.devicePixelRatio || 1;
    const w = this.width();
    canvas.width = Math.round(w * ratio);
    canvas.height = Math.round(this.height * ratio);
    canvas.style.width = w + "px";
    canvas.style.height = this.height + "px";
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    return ctx;
  }

  zoom(t0, t1) {
    const span = Math.max(t1 - t0, Math.min(this.res * 4, this.full[1]));
    const start = Math.min(Math.max(t0, this.full[0]), this.full[1] - span);
    this.window = [Math.max(start, this.full[0]), Math.max(start, this.full[0]) + span];
    this.draw();
  }

  // A "nice" tick step above raw: 1, 2 or 5 times a power of ten, in `unit`s.
  static step(raw, unit) {
    const scaled = raw / unit;
    const power = Math.pow(10, Math.floor(Math.log10(Math.max(scaled, 1e-12))));
    for (const m of [1, 2, 5, 10]) {
      if (m * power >= scaled) return m * power * unit;
    }
    return 10 * power * unit;
  }

  draw() {
    const ctx = this.resize(this.plot);
    const m = this.margin;
    const w = this.width();
    const pw = this.plotWidth();
    const ph = this.plotHeight();
    const [t0, t1] = this.window;
    const b0 = this.bucketAt(t0);
    const b1 = this.bucketAt(t1);
    ctx.clearRect(0, 0, w, this.height);

    // Stacked layers: tops[b] is where the last drawn layer of bucket b ended. The scale is the
    // stacks'; a view far above them (NVML counts the context, hundreds of MiB, on a small
    // program) would flatten them: it is drawn to the top edge and named there instead.
    let stacked = 0;
    for (let b = b0; b <= b1; b += 1) stacked = Math.max(stacked, this.device.timeline.resident[b]);
    let ymax = Math.max(stacked, 1);
    const above = [];
    for (const v of this.views) {
      let most = 0;
      for (const [b, value] of v.points) if (b >= b0 && b <= b1) most = Math.max(most, value);
      if (stacked > 0 && most > 4 * stacked) above.push({ view: v, most });
      else ymax = Math.max(ymax, most);
    }
    ymax *= 1.08;
    const y = (v) => m.top + ph - (v / ymax) * ph;
    const tops = new Float64Array(b1 - b0 + 1);
    let drawnMax = 0;
    let drawnMaxBucket = b0;
    ctx.save();
    ctx.beginPath();
    ctx.rect(m.left, m.top, pw, ph);
    ctx.clip();
    for (const layer of this.layers) {
      ctx.fillStyle = this.colour(layer.name);
      for (let b = b0; b <= b1; b += 1) {
        const v = layer.bytes[b];
        if (v === 0) continue;
        const xa = this.xOf(b * this.res);
        const xb = this.xOf((b + 1) * this.res);
        const below = tops[b - b0];
        ctx.fillRect(xa, y(below + v), Math.max(xb - xa, 0.6), y(below) - y(below + v));
        tops[b - b0] = below + v;
      }
    }
    for (let b = b0; b <= b1; b += 1) {
      if (tops[b - b0] > drawnMax) {
        drawnMax = tops[b - b0];
        drawnMaxBucket = b;
      }
    }
    // The envelope: the most live in each bucket.
    ctx.strokeStyle = "#333";
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let b = b0; b <= b1; b += 1) {
      const v = this.device.timeline.resident[b];
      const xa = this.xOf(b * this.res);
      if (b === b0) ctx.moveTo(xa, y(v)); else ctx.lineTo(xa, y(v));
      ctx.lineTo(this.xOf((b + 1) * this.res), y(v));
    }
    ctx.stroke();
    for (const v of this.views) {
      const s = gmt.viewStyles[v.name];
      ctx.strokeStyle = s.colour;
      ctx.fillStyle = s.colour;
      ctx.setLineDash(s.dash);
      ctx.lineWidth = 1.5;
      // A sample holds until the next one: drawn as steps, never as a slope between samples.
      ctx.beginPath();
      let first = true;
      let lastY = 0;
      for (const [b, value] of v.points) {
        if (b < b0 - 1 || b > b1 + 1) continue;
        const x = this.xOf(b * this.res);
        if (first) ctx.moveTo(x, y(value)); else { ctx.lineTo(x, lastY); ctx.lineTo(x, y(value)); }
        lastY = y(value);
        first = false;
      }
      if (!first) ctx.lineTo(this.xOf((Math.min(b1, this.buckets - 1) + 1) * this.res), lastY);
      ctx.stroke();
      ctx.setLineDash([]);
      for (const [b, value] of v.points) {
        if (b >= b0 && b <= b1) ctx.fillRect(this.xOf(b * this.res) - 1.5, y(value) - 1.5, 3, 3);
      }
    }
    this.drawDroppedHistory(ctx);
    ctx.restore();
    ctx.save();
    ctx.font = "11px sans-serif";
    ctx.textAlign = "right";
    ctx.textBaseline = "top";
    above.forEach((a, i) => {
      ctx.fillStyle = gmt.viewStyles[a.view.name].colour;
      ctx.fillText("\u2191 " + gmt.viewStyles[a.view.name].label + " up to " + gmt.bytes(a.most) +
                   ", above the scale", m.left + pw - 4, m.top + 3 + i * 13);
    });
    ctx.restore();
    this.root.dataset.aboveScale = above.map((a) => a.view.name).join(",");

    this.drawPhases(ctx);
    this.drawMarkers(ctx, y);
    this.drawAxes(ctx, y, ymax);
    // What was drawn, for whoever checks the page (the browser test): the tallest stack.
    this.root.dataset.peakBytes = String(drawnMax);
    this.root.dataset.peakBucketStartNs = String(drawnMaxBucket * this.res);
    this.drawOverlay();
  }

  // A bounded trace kept only its last stretch: before it, nothing is known (not nothing live).
  drawDroppedHistory(ctx) {
    const h = this.trace.history;
    if (!h || !h.kept_from_ns) return;
    const m = this.margin;
    const xa = Math.max(this.xOf(0), m.left);
    const xb = Math.min(this.xOf(h.kept_from_ns), m.left + this.plotWidth());
    if (xb <= xa) return;
    ctx.fillStyle = "rgba(120,120,120,0.12)";
    ctx.fillRect(xa, m.top, xb - xa, this.plotHeight());
    ctx.fillStyle = "#555";
    ctx.font = "11px sans-serif";
    ctx.textBaseline = "middle";
    const label = "history dropped (bounded trace): kept from " + gmt.duration(h.kept_from_ns);
    if (xb - xa > 60) ctx.fillText(label, xa + 6, m.top + this.plotHeight() / 2, xb - xa - 12);
  }

  drawPhases(ctx) {
    const m = this.margin;
    const [t0, t1] = this.window;
    ctx.save();
    ctx.beginPath();
    ctx.rect(m.left, 0, this.plotWidth(), m.top);
    ctx.clip();
    ctx.font = "10px sans-serif";
    ctx.textBaseline = "middle";
    for (const r of this.runs) {
      if (r.end_ns < t0 || r.start_ns > t1) continue;
      const xa = this.xOf(r.start_ns);
      const xb = Math.max(this.xOf(r.end_ns), xa + 1);
      const top = 4 + r.lane * 13;
      ctx.fillStyle = gmt.colour(r.name, 45, 80);
      ctx.fillRect(xa, top, xb - xa, 12);
      ctx.strokeStyle = gmt.colour(r.name, 45, 50);
      ctx.strokeRect(xa + 0.5, top + 0.5, xb - xa - 1, 11);
      if (xb - xa > 30) {
        ctx.fillStyle = "#222";
        const label = r.name.length * 6 < xb - xa - 6 ? r.name : r.name.slice(0, Math.floor((xb - xa - 6) / 6)) + "\u2026";
        ctx.fillText(label, Math.max(xa, m.left) + 3, top + 6);
      }
    }
    ctx.restore();
  }

  // The moments whose stacks the page holds: the peak and each failed allocation.
  markers() {
    const list = [];
    if (this.device.peak_bytes > 0) {
      list.push({ kind: "peak", time_ns: this.device.peak_time_ns });
    }
    this.ooms.forEach((o, i) => list.push({ kind: "oom", time_ns: o.time_ns, oom: i }));
    return list;
  }

  drawMarkers(ctx, y) {
    const m = this.margin;
    const [t0, t1] = this.window;
    ctx.font = "bold 11px sans-serif";
    ctx.textBaseline = "bottom";
    for (const marker of this.markers()) {
      if (marker.time_ns < t0 || marker.time_ns > t1) continue;
      const x = this.xOf(marker.time_ns);
      const peak = marker.kind === "peak";
      ctx.strokeStyle = peak ? "#111" : "#c0392b";
      ctx.fillStyle = ctx.strokeStyle;
      ctx.setLineDash(peak ? [4, 3] : [2, 2]);
      ctx.beginPath();
      ctx.moveTo(x, m.top);
      ctx.lineTo(x, m.top + this.plotHeight());
      ctx.stroke();
      ctx.setLineDash([]);
      const label = peak ? "\u25b2 peak " + gmt.bytes(this.device.peak_bytes) : "\u2715";
      const top = peak ? y(this.device.peak_bytes) : m.top + 12;
      ctx.fillText(label, Math.min(x + 3, this.width() - m.right - 90), Math.max(top - 2, m.top + 11));
    }
  }

  drawAxes(ctx, y, ymax) {
    const m = this.margin;
    const ph = this.plotHeight();
    const pw = this.plotWidth();
    ctx.strokeStyle = "#999";
    ctx.fillStyle = "#444";
    ctx.font = "11px sans-serif";
    ctx.lineWidth = 1;
    ctx.strokeRect(m.left + 0.5, m.top + 0.5, pw, ph);
    const unit = Math.pow(1024, Math.max(0, Math.floor(Math.log(ymax / 4) / Math.log(1024))));
    const yStep = gmt.Timeline.step(ymax / 4, unit);
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (let v = 0; v <= ymax; v += yStep) {
      ctx.fillText(gmt.bytes(v), m.left - 5, y(v));
      ctx.beginPath();
      ctx.strokeStyle = "#e4e4e4";
      ctx.moveTo(m.left + 1, Math.round(y(v)) + 0.5);
      ctx.lineTo(m.left + pw, Math.round(y(v)) + 0.5);
      ctx.stroke();
    }
    const [t0, t1] = this.window;
    const tStep = gmt.Timeline.step((t1 - t0) / 6, 1);
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    // The folded start-up, said at the axis's left end.
    const folded = this.full[0] > 0 && t0 <= this.full[0];
    this.root.dataset.axisStartNs = String(this.full[0]);
    if (folded) {
      ctx.textAlign = "left";
      ctx.fillText("\u27e8 start-up folded: first allocation at " + gmt.duration(this.full[0]),
                   m.left + 2, m.top + ph + 5);
      ctx.textAlign = "center";
    }
    for (let t = Math.ceil(t0 / tStep) * tStep; t <= t1; t += tStep) {
      const x = this.xOf(t);
      if (folded && x < m.left + 260) continue;
      ctx.fillText(gmt.duration(t), x, m.top + ph + 5);
      ctx.strokeStyle = "#999";
      ctx.beginPath();
      ctx.moveTo(Math.round(x) + 0.5, m.top + ph);
      ctx.lineTo(Math.round(x) + 0.5, m.top + ph + 4);
      ctx.stroke();
    }
    ctx.textAlign = "left";
  }

  drawOverlay() {
    const ctx = this.resize(this.overlay);
    const m = this.margin;
    ctx.clearRect(0, 0, this.width(), this.height);
    if (this.selection) {
      const [xa, xb] = this.selection;
      ctx.fillStyle = "rgba(52, 152, 219, 0.2)";
      ctx.fillRect(Math.min(xa, xb), m.top, Math.abs(xb - xa), this.plotHeight());
    }
    const line = (x, colour) => {
      ctx.strokeStyle = colour;
      ctx.beginPath();
      ctx.moveTo(Math.round(x) + 0.5, m.top);
      ctx.lineTo(Math.round(x) + 0.5, m.top + this.plotHeight());
      ctx.stroke();
    };
    if (this.selected !== null) line(this.xOf(this.selected), "#2471a3");
    if (this.hoverX !== null) line(this.hoverX, "rgba(0,0,0,0.45)");
  }

  // What the tooltip says at pixel x: the bucket's total, its layers, the views and phases.
  describe(x) {
    const b = this.bucketAtPixel(x);
    const t = (b + 0.5) * this.res;
    const rows = [gmt.el("div", { class: "tip-time" },
                         gmt.duration(b * this.res) + " \u2013 " + gmt.duration((b + 1) * this.res))];
    rows.push(gmt.el("div", null, gmt.el("b", null, gmt.bytes(this.device.timeline.resident[b])),
                     " live (the most in this interval)"));
    for (const layer of this.layers) {
      if (layer.bytes[b] > 0) {
        rows.push(gmt.el("div", null, gmt.el("i", { class: "swatch", style: "background:" + this.colour(layer.name) }),
                         layer.name + " " + gmt.bytes(layer.bytes[b])));
      }
    }
    for (const v of this.views) {
      if (v.byBucket.has(b)) {
        rows.push(gmt.el("div", null, gmt.viewStyles[v.name].label + " " + gmt.bytes(v.byBucket.get(b))));
      }
    }
    const open = this.runs.filter((r) => r.start_ns <= t && r.end_ns >= t).map((r) => r.name);
    if (open.length > 0) rows.push(gmt.el("div", { class: "tip-phase" }, "in " + open.join(" > ")));
    return rows;
  }

  // The peak or failed allocation within 6 pixels of x, else null.
  markerNear(x) {
    let best = null;
    for (const marker of this.markers()) {
      const distance = Math.abs(this.xOf(marker.time_ns) - x);
      if (distance <= 6 && (best === null || distance < best.distance)) best = { marker, distance };
    }
    return best ? best.marker : null;
  }

  // Selects the moment t (ns); a marker's own moment when t is one.
  select(t, marker) {
    this.selected = marker ? marker.time_ns : t;
    this.drawOverlay();
    this.onMoment(this, this.selected, marker || null);
  }

  // The marker at time t exactly, or in the same bucket (a moment given as a number).
  markerAt(t) {
    const b = this.bucketAt(t);
    const exact = this.markers().find((mk) => mk.time_ns === t);
    return exact || this.markers().find((mk) => this.bucketAt(mk.time_ns) === b) || null;
  }

  listen() {
    const pointer = (e) => {
      const rect = this.overlay.getBoundingClientRect();
      return e.clientX - rect.left;
    };
    this.overlay.addEventListener("wheel", (e) => {
      e.preventDefault();
      const tc = this.timeAt(pointer(e));
      const factor = e.deltaY > 0 ? 1.25 : 0.8;
      const [t0, t1] = this.window;
      this.zoom(tc - (tc - t0) * factor, tc + (t1 - tc) * factor);
    }, { passive: false });
    this.overlay.addEventListener("mousedown", (e) => {
      this.drag = { x: pointer(e), pan: e.shiftKey, window: this.window.slice() };
    });
    this.overlay.addEventListener("mousemove", (e) => {
      const x = pointer(e);
      if (this.drag && this.drag.pan) {
        const [t0, t1] = this.drag.window;
        const dt = ((x - this.drag.x) / this.plotWidth()) * (t1 - t0);
        this.zoom(t0 - dt, t1 - dt);
        return;
      }
      if (this.drag && Math.abs(x - this.drag.x) > 4) this.selection = [this.drag.x, x];
      this.hoverX = x;
      this.drawOverlay();
      this.tip.replaceChildren(...this.describe(x));
      this.tip.hidden = false;
      const left = x + 14 + 220 > this.width() ? x - 14 - 220 : x + 14;
      this.tip.style.left = Math.max(left, 0) + "px";
      this.tip.style.top = this.margin.top + 4 + "px";
    });
    this.overlay.addEventListener("mouseup", (e) => {
      const x = pointer(e);
      const drag = this.drag;
      this.drag = null;
      this.selection = null;
      if (!drag) return;
      if (!drag.pan && Math.abs(x - drag.x) > 4) {
        this.zoom(this.timeAt(Math.min(x, drag.x)), this.timeAt(Math.max(x, drag.x)));
      } else if (Math.abs(x - drag.x) <= 4) {
        this.select((this.bucketAtPixel(x) + 0.5) * this.res, this.markerNear(x));
      }
    });
    this.overlay.addEventListener("mouseleave", () => {
      this.hoverX = null;
      this.selection = null;
      this.drag = null;
      this.tip.hidden = true;
      this.drawOverlay();
    });
    this.overlay.addEventListener("dblclick", () => this.zoom(this.full[0], this.full[1]));
  }
};
