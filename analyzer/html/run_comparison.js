// SPDX-License-Identifier: Apache-2.0
// Two runs side by side (`gpumemtrace diff --html`; run_comparison_data.cpp writes the data):
// each device's timeline in both runs, stacked by role (by library where a run has no roles),
// drawn on one axis of steps so that step 3 of one run sits above step 3 of the other, whatever
// either took; then what moved at the peak by role, by module and by site, the largest change
// first. The figures of what moved are diff's own JSON (data.diff, as --json prints it): the page
// only draws them.
//
// Steps are what the steps view calls steps (steps.js: a phase, NVTX range, optimizer step or
// root forward run more than once), the first name both runs have. Where they have none in
// common, both runs are drawn on one time axis from each device's first allocation.

gmt.RunComparison = class {
  constructor(data) {
    this.data = data;
    this.runs = data.runs;
    this.diff = data.diff;
    this.charts = [];
    this.stepName = gmt.RunComparison.commonStep(this.runs);
  }

  // The first step name (in the before run's order) that the after run has too; null if none.
  static commonStep(runs) {
    const after = new Set(gmt.Steps.names(runs[1]));
    return gmt.Steps.names(runs[0]).find((name) => after.has(name)) || null;
  }

  // Where a run's moments go on the shared axis: {toX(t), fromX(x), steps, from, to}. By step,
  // step k (from 1) spans [k - 1, k): from the end of run k - 1 (the first allocation for k = 1)
  // to the end of run k; where the runs are root forwards, from the start of forward k to the
  // start of the next (its backward belongs to it). What comes before the first step is
  // [-1, 0), what comes after the last [n, n + 1). By time: ns since the first allocation.
  static alignment(run, device, stepName) {
    const first = device.first_alloc_ns;
    const end = Math.max(run.duration_ns, first + 1);
    if (stepName === null) {
      return { steps: 0, from: 0, to: end - first, toX: (t) => t - first, fromX: (x) => x + first };
    }
    const runs = gmt.Steps.runs(run).filter((r) => r.name === stepName).sort((a, b) => a.start_ns - b.start_ns);
    const byStart = /^forward of /.test(stepName);
    const marks = byStart ? runs.map((r) => r.start_ns).concat([runs[runs.length - 1].end_ns])
                          : [Math.min(first, runs[0].start_ns)].concat(runs.map((r) => r.end_ns));
    // Each piece of the axis: its moments [t0, t1) onto [x0, x0 + 1).
    const pieces = [];
    if (marks[0] > first) pieces.push({ t0: first, t1: marks[0], x0: -1 });
    for (let k = 0; k + 1 < marks.length; k += 1) pieces.push({ t0: marks[k], t1: marks[k + 1], x0: k });
    const n = marks.length - 1;
    if (end > marks[n]) pieces.push({ t0: marks[n], t1: end, x0: n });
    const toX = (t) => {
      let lo = 0, hi = pieces.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (pieces[mid].t0 <= t) lo = mid; else hi = mid - 1;
      }
      const p = pieces[lo];
      return p.x0 + Math.min(Math.max((t - p.t0) / Math.max(p.t1 - p.t0, 1), 0), 1);
    };
    const fromX = (x) => {
      const p = pieces.find((q) => x >= q.x0 && x < q.x0 + 1) || (x < pieces[0].x0 ? pieces[0] : pieces[pieces.length - 1]);
      return p.t0 + Math.min(Math.max(x - p.x0, 0), 1) * (p.t1 - p.t0);
    };
    return { steps: n, from: pieces[0].x0, to: pieces[pieces.length - 1].x0 + 1, toX, fromX };
  }

  build(root) {
    const [before, after] = this.runs;
    root.append(gmt.el("h1", null, "gpumemtrace diff"));
    for (const run of this.runs) {
      root.append(gmt.el("p", { class: "run-line", "data-run": run.label },
        gmt.el("b", null, run.label + " "), run.path + " \u00b7 pid " + run.pid + " \u00b7 " + run.events +
        " events over " + gmt.duration(run.duration_ns),
        gmt.el("span", { class: "command" }, " " + (run.argv.join(" ") || "(unknown command)"))));
    }
    root.append(gmt.el("p", { class: "lead alignment", "data-step": this.stepName || "" },
      this.stepName
        ? "Both runs drawn by step: runs of " + this.stepName + " (" + gmt.Steps.runs(before).filter((r) => r.name === this.stepName).length +
          " before, " + gmt.Steps.runs(after).filter((r) => r.name === this.stepName).length + " after), each step the same width whatever it took."
        : "The runs have no step in common (no phase, NVTX range, optimizer step or root forward run more than once in both): drawn on one time axis from each device's first allocation."));
    for (const d of this.diff.devices) root.append(this.deviceSection(d));
    root.append(gmt.el("h2", null, "by site"), this.sitesTable());
  }

  deviceSection(d) {
    const state = (side, present) => (present ? gmt.bytes(d[side]) : "absent");
    const section = gmt.el("section", { class: "device compared", "data-device": d.device },
      gmt.el("h2", null, gmt.deviceName(d.device)),
      gmt.el("p", { class: "peak-line" }, "peak " + state("peak_before", d.in_before) + " \u2192 " + state("peak_after", d.in_after) + " (",
             gmt.el("b", { "data-bytes": d.peak_change }, gmt.RunComparison.signed(d.peak_change)), ")"));
    const devices = this.runs.map((run) => run.devices.find((x) => x.device === d.device) || null);
    const chart = new gmt.ComparedTimelines(this.runs, devices, this.stepName);
    this.charts.push(chart);
    section.append(chart.root);
    if (d.by_role) {
      section.append(gmt.el("div", { class: "columns" },
        gmt.el("div", { class: "column" }, gmt.el("h4", null, "by role at the peak"),
               gmt.RunComparison.changeTable("role", d.by_role.map((r) => [r.role, r]), "role-changes")),
        gmt.el("div", { class: "column wide" }, gmt.el("h4", null, "by module at the peak (the modules whose bytes changed)"),
               d.by_module.length > 0
                 ? gmt.RunComparison.changeTable("module", d.by_module.map((m) => [m.module, m]), "module-changes")
                 : gmt.el("p", { class: "note" }, "No module's bytes changed."),
               d.by_module_left_out > 0 ? gmt.el("p", { class: "note" }, d.by_module_left_out + " smaller changes not listed") : null)));
    } else {
      section.append(gmt.el("p", { class: "note" }, "Neither run recorded roles on this device (the framework's hooks: docs/roles.md)."));
    }
    return section;
  }

  static signed(n) {
    return (n > 0 ? "+" : n < 0 ? "-" : "\u00b1") + gmt.bytes(Math.abs(n));
  }

  static changeCell(n) {
    return gmt.el("td", { class: "num change" + (n > 0 ? " grew" : n < 0 ? " shrank" : ""), "data-bytes": n }, gmt.RunComparison.signed(n));
  }

  // Rows of [name, {peak_before, peak_after, peak_change}], in the order given (diff's).
  static changeTable(what, rows, cls) {
    return gmt.table([what, "before", "after", "change"], rows.map(([name, r]) =>
      gmt.el("tr", { "data-name": name, "data-before": r.peak_before, "data-after": r.peak_after, "data-change": r.peak_change },
             gmt.el("td", null, what === "role" ? gmt.el("i", { class: "swatch", style: "background:" + gmt.roleColour(name) }) : null, name),
             gmt.bytesCell(r.peak_before), gmt.bytesCell(r.peak_after), gmt.RunComparison.changeCell(r.peak_change))),
      { class: "changes " + cls });
  }

  sitesTable() {
    const sites = this.diff.sites;
    if (sites.length === 0) return gmt.el("p", null, "No site's bytes at the peak or never freed changed.");
    const shown = sites.slice(0, 200);
    const table = gmt.table(["site", "device", "at peak before", "after", "change", "never freed before", "after", "change"],
      shown.map((s) => gmt.el("tr", { "data-site": s.site, "data-peak-change": s.peak_change, "data-leak-change": s.leak_change },
        gmt.el("td", { class: "function" }, gmt.el("details", null, gmt.el("summary", null, s.site || "(no stack recorded)"),
               gmt.stackList({ frames: s.frames.map((f) => [f.function, f.file ? f.file + (f.line ? ":" + f.line : "") : f.module ? "(" + f.module.split("/").pop() + ")" : ""]), more_frames: 0, via: "" }))),
        gmt.cell(gmt.deviceName(s.device)), gmt.bytesCell(s.peak_before), gmt.bytesCell(s.peak_after), gmt.RunComparison.changeCell(s.peak_change),
        gmt.bytesCell(s.leak_before), gmt.bytesCell(s.leak_after), gmt.RunComparison.changeCell(s.leak_change))),
      { class: "changes site-changes" });
    const out = gmt.el("div", null, table);
    if (sites.length > shown.length) out.append(gmt.el("p", { class: "note" }, (sites.length - shown.length) + " smaller changes not listed"));
    return out;
  }

  draw() {
    for (const chart of this.charts) chart.draw();
  }
};

// One device's timelines in both runs, one above the other on the same axis and the same scale;
// the pointer shows what each run held at that point of the axis.
gmt.ComparedTimelines = class {
  constructor(runs, devices, stepName) {
    this.runs = runs;
    this.devices = devices;
    this.stepName = stepName;
    this.margin = { left: 74, right: 14, top: 8, bottom: 22 };
    this.height = 190;
    this.lanes = runs.map((run, i) => {
      const d = devices[i];
      if (!d) return { run, device: null };
      const tl = d.timeline;
      const byRole = tl.roles.length > 0;
      return { run, device: d, tl, by: byRole ? "role" : "library", layers: byRole ? tl.roles : tl.libraries,
               align: gmt.RunComparison.alignment(run, d, stepName) };
    });
    const drawn = this.lanes.filter((l) => l.device);
    this.from = Math.min(...drawn.map((l) => l.align.from));
    this.to = Math.max(...drawn.map((l) => l.align.to));
    this.ymax = 1.08 * Math.max(1, ...drawn.map((l) => Math.max(0, ...l.tl.resident)));
    this.root = gmt.el("div", { class: "compared-timelines" });
    this.tip = gmt.el("div", { class: "compare-tip note" }, "Point at a timeline to compare both runs there.");
    for (const lane of this.lanes) {
      lane.root = gmt.el("div", { class: "chart compared", "data-run": lane.run.label });
      lane.root.append(gmt.el("h4", null, lane.run.label + (lane.device ? "" : ": this device was not used")));
      if (lane.device) {
        lane.canvas = gmt.el("canvas", { class: "plot" });
        lane.frame = gmt.el("div", { class: "canvas-frame" }, lane.canvas);
        lane.frame.style.height = this.height + "px";
        lane.root.dataset.steps = String(lane.align.steps);
        lane.root.dataset.by = lane.by;
        lane.root.append(lane.frame, gmt.el("div", { class: "legend" }, lane.layers.map((l) =>
          gmt.el("span", { class: "key", "data-layer": l.name },
                 gmt.el("i", { style: "background:" + this.colour(lane, l.name) }), l.name))));
        lane.canvas.addEventListener("mousemove", (e) => this.hover(e.clientX - lane.canvas.getBoundingClientRect().left));
      }
      this.root.append(lane.root);
    }
    this.root.append(this.tip);
  }

  colour(lane, name) {
    return lane.by === "role" ? gmt.roleColour(name) : gmt.libraryColour(name);
  }

  width() {
    const lane = this.lanes.find((l) => l.frame);
    return Math.max(lane ? lane.frame.clientWidth : 300, 300);
  }
  xOf(x) {
    const pw = this.width() - this.margin.left - this.margin.right;
    return this.margin.left + ((x - this.from) / Math.max(this.to - this.from, 1e-9)) * pw;
  }
  axisAt(px) {
    const pw = this.width() - this.margin.left - this.margin.right;
    return this.from + ((px - this.margin.left) / pw) * (this.to - this.from);
  }

  draw() {
    for (const lane of this.lanes) if (lane.device) this.drawLane(lane);
  }

  drawLane(lane) {
    const canvas = lane.canvas;
    const ratio = window.devicePixelRatio || 1;
    const w = this.width();
    canvas.width = Math.round(w * ratio);
    canvas.height = Math.round(this.height * ratio);
    canvas.style.width = w + "px";
    canvas.style.height = this.height + "px";
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, w, this.height);
    const m = this.margin;
    const ph = this.height - m.top - m.bottom;
    const y = (v) => m.top + ph - (v / this.ymax) * ph;
    const tl = lane.tl;
    const res = tl.resolution_ns;
    const first = Math.floor(lane.device.first_alloc_ns / res);
    const tops = new Float64Array(tl.resident.length);
    for (const layer of lane.layers) {
      ctx.fillStyle = this.colour(lane, layer.name);
      for (let b = first; b < tl.resident.length; b += 1) {
        const v = layer.bytes[b];
        if (!v) continue;
        // Whole pixels: bars that meet at a fraction of one would leave a seam between them.
        const xa = Math.floor(this.xOf(lane.align.toX(b * res)));
        const xb = Math.ceil(this.xOf(lane.align.toX((b + 1) * res)));
        ctx.fillRect(xa, y(tops[b] + v), Math.max(xb - xa, 1), y(tops[b]) - y(tops[b] + v));
        tops[b] += v;
      }
    }
    let most = 0;
    for (const v of tops) most = Math.max(most, v);
    // The run's peak, where it falls on the shared axis.
    const d = lane.device;
    if (d.peak_bytes > 0) {
      const x = this.xOf(lane.align.toX(d.peak_time_ns));
      ctx.strokeStyle = "#111";
      ctx.fillStyle = "#111";
      ctx.setLineDash([4, 3]);
      ctx.beginPath();
      ctx.moveTo(x, m.top);
      ctx.lineTo(x, m.top + ph);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.font = "bold 11px sans-serif";
      ctx.textBaseline = "bottom";
      ctx.fillText("\u25b2 peak " + gmt.bytes(d.peak_bytes), Math.min(x + 3, w - m.right - 90), Math.max(y(d.peak_bytes) - 2, m.top + 11));
    }
    // What was drawn, for whoever checks the page: the tallest stack.
    lane.root.dataset.drawnPeakBytes = String(most);
    // Step boundaries, labelled as far apart as the width allows.
    ctx.strokeStyle = "#999";
    ctx.fillStyle = "#444";
    ctx.font = "11px sans-serif";
    ctx.lineWidth = 1;
    ctx.strokeRect(m.left + 0.5, m.top + 0.5, w - m.left - m.right, ph);
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    if (this.stepName) {
      const every = Math.max(1, Math.ceil((this.to - this.from) / ((w - m.left - m.right) / 60)));
      for (let k = Math.ceil(this.from); k <= this.to; k += 1) {
        const x = Math.round(this.xOf(k)) + 0.5;
        ctx.strokeStyle = "#d0d0d0";
        ctx.beginPath();
        ctx.moveTo(x, m.top);
        ctx.lineTo(x, m.top + ph);
        ctx.stroke();
        if (k < this.to && (k - Math.ceil(this.from)) % every === 0) {
          const label = k < 0 ? "before" : k >= lane.align.steps ? (k === lane.align.steps ? "after" : "") : "step " + (k + 1);
          ctx.fillText(label, this.xOf(k + 0.5), m.top + ph + 5);
        }
      }
    } else {
      const step = gmt.Timeline.step((this.to - this.from) / 6, 1);
      for (let t = 0; t <= this.to; t += step) ctx.fillText("+" + gmt.duration(t), this.xOf(t), m.top + ph + 5);
    }
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    const unit = Math.pow(1024, Math.max(0, Math.floor(Math.log(this.ymax / 4) / Math.log(1024))));
    const yStep = gmt.Timeline.step(this.ymax / 3, unit);
    for (let v = 0; v <= this.ymax; v += yStep) ctx.fillText(gmt.bytes(v), m.left - 5, y(v));
  }

  // What each run held at axis point x: the most live in the bucket that point falls in.
  hover(px) {
    const x = this.axisAt(px);
    const where = this.stepName ? (x < 0 ? "before the first step" : "step " + (Math.floor(x) + 1)) : "+" + gmt.duration(Math.max(x, 0)) + " from the first allocation";
    const rows = [gmt.el("b", null, where + ": ")];
    for (const lane of this.lanes) {
      if (!lane.device) continue;
      const t = lane.align.fromX(x);
      const b = Math.min(Math.max(Math.floor(t / lane.tl.resolution_ns), 0), lane.tl.resident.length - 1);
      const parts = lane.layers.filter((l) => l.bytes[b] > 0).sort((p, q) => q.bytes[b] - p.bytes[b]).slice(0, 4)
        .map((l) => l.name + " " + gmt.bytes(l.bytes[b]));
      rows.push(gmt.el("span", { class: "tip-run", "data-run": lane.run.label, "data-bytes": lane.tl.resident[b] },
                       lane.run.label + " " + gmt.bytes(lane.tl.resident[b]) + " at " + gmt.duration(t) +
                       (parts.length > 0 ? " (" + parts.join(", ") + ")" : "") + "; "));
    }
    this.tip.replaceChildren(...rows);
  }
};

(function start() {
  const data = JSON.parse(document.getElementById("gmt-data").textContent);
  const page = new gmt.RunComparison(data);
  page.build(document.getElementById("report"));
  page.draw();
  let pending = null;
  window.addEventListener("resize", () => {
    clearTimeout(pending);
    pending = setTimeout(() => page.draw(), 100);
  });
  // For scripts that drive the page (the browser test): the page, and a flag once drawn.
  window.gmtComparison = page;
  document.body.dataset.ready = "1";
})();
