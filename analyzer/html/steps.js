// SPDX-License-Identifier: Apache-2.0
// Memory per step: where the program marks steps (a phase or NVTX range run again and again, or
// what the framework's hooks report: each optimizer step(), each root module's forward), each
// run's peak and what was live when it ended (the most live in the timeline's interval it ended
// in), and what grew from one step to the next: a leak's slope per step, not per second.

gmt.Steps = class {
  constructor(trace, device) {
    this.trace = trace;
    this.device = device;
    this.names = gmt.Steps.names(trace);
    this.root = gmt.el("div", { class: "steps" });
    if (this.names.length === 0) {
      this.root.append(gmt.el("p", { class: "note" }, "No phase or NVTX range ran more than once: no steps to compare."));
      return;
    }
    this.menu = gmt.el("select", { class: "step-name" }, this.names.map((n) => gmt.el("option", { value: n }, n)));
    this.menu.addEventListener("change", () => this.show(this.menu.value));
    this.body = gmt.el("div");
    this.root.append(gmt.el("div", { class: "toolbar" }, "steps: runs of ", this.menu), this.body);
    this.show(this.names[0]);
  }

  // The names run more than once; the one that says "step" first, else the most run.
  static names(trace) {
    const counts = new Map();
    for (const r of gmt.Steps.runs(trace)) counts.set(r.name, (counts.get(r.name) || 0) + 1);
    return [...counts.entries()].filter(([, n]) => n >= 2)
      .sort((a, b) => (/step/i.test(b[0]) - /step/i.test(a[0])) || b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .map(([name]) => name);
  }

  // What may be a step: the phase and NVTX runs, and the optimizer steps and root forwards the
  // framework's hooks reported.
  static runs(trace) {
    return trace.phase_runs.concat(trace.step_runs || []);
  }

  // Each run of `name`: {start_ns, end_ns, peak, at_end, growth}.
  static rows(trace, device, name) {
    const tl = device.timeline;
    const res = tl.resolution_ns;
    const last = tl.resident.length - 1;
    const bucket = (t) => Math.min(Math.max(Math.floor(t / res), 0), last);
    const runs = gmt.Steps.runs(trace).filter((r) => r.name === name).sort((a, b) => a.start_ns - b.start_ns);
    const rows = [];
    let before = null;
    for (const r of runs) {
      let peak = 0;
      for (let b = bucket(r.start_ns); b <= bucket(r.end_ns); b += 1) peak = Math.max(peak, tl.resident[b]);
      const atEnd = tl.resident[bucket(r.end_ns)];
      rows.push({ start_ns: r.start_ns, end_ns: r.end_ns, peak, at_end: atEnd, growth: before === null ? null : atEnd - before });
      before = atEnd;
    }
    return rows;
  }

  // Least squares slope of what was live at each step's end, in bytes per step.
  static slope(rows) {
    const n = rows.length;
    if (n < 2) return 0;
    let sx = 0, sy = 0, sxx = 0, sxy = 0;
    rows.forEach((r, i) => { sx += i; sy += r.at_end; sxx += i * i; sxy += i * r.at_end; });
    return (n * sxy - sx * sy) / (n * sxx - sx * sx);
  }

  show(name) {
    const rows = gmt.Steps.rows(this.trace, this.device, name);
    const slope = gmt.Steps.slope(rows);
    this.root.dataset.step = name;
    this.root.dataset.steps = String(rows.length);
    this.root.dataset.slopeBytesPerStep = String(Math.round(slope));
    const grew = rows.length > 1 ? rows[rows.length - 1].at_end - rows[0].at_end : 0;
    this.body.replaceChildren(gmt.el("p", { class: "step-summary" },
      rows.length + " runs of " + name + "; live at their ends grew by " + gmt.bytes(grew) + " from the first to the last, ",
      gmt.el("b", { "data-bytes": Math.round(slope) }, gmt.bytes(Math.round(slope)) + " per step"), " (least squares)"));
    // Bars of each step's peak, and of what stayed live at its end.
    let most = 1;
    for (const r of rows) most = Math.max(most, r.peak);
    const shown = rows.slice(0, 400);
    const bars = gmt.el("div", { class: "step-bars" }, shown.map((r, i) =>
      gmt.el("div", { class: "step-bar", title: "step " + (i + 1) + ": peak " + gmt.bytes(r.peak) + ", live at its end " + gmt.bytes(r.at_end),
                      style: "height:" + (100 * r.peak) / most + "%" },
             gmt.el("div", { class: "step-kept", style: "height:" + (100 * r.at_end) / Math.max(r.peak, 1) + "%" }))));
    const table = gmt.table(["step", "from", "took", "peak", "live at its end", "growth"], shown.map((r, i) =>
      gmt.el("tr", { "data-step": i + 1 }, gmt.cell(String(i + 1)), gmt.cell(gmt.duration(r.start_ns)),
             gmt.cell(gmt.duration(r.end_ns - r.start_ns)), gmt.bytesCell(r.peak), gmt.bytesCell(r.at_end),
             r.growth === null ? gmt.cell("") : gmt.bytesCell(r.growth))), { class: "steps-table" });
    this.body.append(bars, gmt.el("details", null, gmt.el("summary", null, "each step"), table));
    if (rows.length > shown.length) this.body.append(gmt.el("p", { class: "note" }, (rows.length - shown.length) + " later steps not drawn"));
  }
};
