// SPDX-License-Identifier: Apache-2.0
// Builds the page from the JSON object in #gmt-data (page_data.cpp writes it): per trace
// its devices (timeline, the moment clicked, every allocation over time and the life of one
// clicked, the allocator's segments, memory per step, the flame graph of the peak, the views at
// the peak), phases, failed allocations and leaks; the table of processes for a run of several.
//
// A moment can also be given in the address: #click=<ns>[&trace=<i>][&device=<ordinal>] selects
// it as a click would (the browser test uses it, and it makes a moment linkable).

gmt.Report = class {
  constructor(data) {
    this.data = data;
    this.charts = [];
    this.flames = [];
    this.allocations = [];
    this.segments = [];
    for (const trace of data.traces) gmt.Report.linkStacks(trace);
  }

  // Sites, holders, failed calls and leaks name their stack by its index in trace.stacks (each
  // stack is written once): given their frames here, for the code that draws them.
  static linkStacks(trace) {
    const link = (item) => {
      const stack = trace.stacks[item.stack];
      item.frames = stack ? stack.frames : [];
      item.more_frames = stack ? stack.more_frames : 0;
      item.via = stack ? stack.via : "";
    };
    for (const device of trace.devices) device.peak_sites.forEach(link);
    for (const oom of trace.ooms) {
      link(oom);
      oom.holders.forEach(link);
    }
    trace.leaks.forEach(link);
  }

  build(root) {
    const d = this.data;
    const count = d.traces.length;
    root.append(gmt.el("h1", null, "gpumemtrace report"),
                gmt.el("p", { class: "lead" }, count === 1 ? "1 process" : count + " processes",
                       " \u00b7 timelines in at most " + d.limits.buckets_per_device +
                       " intervals per device, each showing the most that was live during it"));
    if (d.processes.length > 0) {
      root.append(gmt.el("h2", null, "processes"), gmt.processTable(d.processes));
    }
    if (d.job) root.append(gmt.jobView(d.job));
    for (const u of d.unreadable) root.append(gmt.el("p", { class: "error" }, "unreadable: " + u.error));
    for (const trace of d.traces) root.append(this.traceSection(trace));
  }

  traceSection(t) {
    const title = "pid " + t.pid + (t.rank === null ? "" : " (rank " + t.rank + ")") +
                  (t.host ? " on " + t.host : "");
    const section = gmt.el("section", { class: "trace", id: "trace-" + t.index },
      gmt.el("h2", null, title),
      gmt.el("p", { class: "command" }, t.argv.join(" ") || "(unknown command)"),
      gmt.el("p", null, t.events + " events over " + gmt.duration(t.duration_ns) + " \u00b7 " +
             (t.end === "exited" ? "complete"
              : t.end === "running" ? "still running (pid " + t.pid + ")" : t.end) + (t.end_reason ? ": " + t.end_reason : "") +
             " \u00b7 " + t.path));
    // A bounded trace's kept history: from when it is complete, what was carried from before.
    if (t.history_text) section.append(gmt.el("p", { class: "note history" }, t.history_text));
    for (const note of t.notes.concat(t.symbolization_warnings)) {
      section.append(gmt.el("p", { class: "note" }, note));
    }
    if (t.devices.length === 0) section.append(gmt.el("p", null, "No device memory was allocated."));
    for (const device of t.devices) section.append(this.deviceSection(t, device));
    if (t.phases.length > 0) {
      section.append(gmt.el("h3", null, "phases"), gmt.phasesTable(t.phases));
      if (t.phase_runs_left_out > 0) {
        section.append(gmt.el("p", { class: "note" }, t.phase_runs_left_out + " later phase runs are not drawn"));
      }
    }
    if (t.ooms.length > 0) {
      section.append(gmt.el("h3", null, "failed allocations"), gmt.oomsTable(t.ooms));
      if (t.ooms_left_out > 0) section.append(gmt.el("p", { class: "note" }, t.ooms_left_out + " more not listed"));
    }
    section.append(gmt.el("h3", null, "never freed"));
    if (t.leaks.length === 0) {
      section.append(gmt.el("p", null, "Everything allocated was freed."));
    } else {
      section.append(gmt.leaksTable(t.leaks));
      if (t.leaks_left_out > 0) section.append(gmt.el("p", { class: "note" }, t.leaks_left_out + " smaller groups not listed"));
    }
    return section;
  }

  deviceSection(t, d) {
    const who = [d.name, d.pci_bus_id ? "PCI " + d.pci_bus_id : ""].filter((s) => s).join(", ");
    const section = gmt.el("section", { class: "device" },
      gmt.el("h3", null, gmt.deviceName(d.device) + (who ? " (" + who + ")" : "")),
      gmt.el("p", { class: "peak-line" }, "peak ", gmt.el("b", { "data-bytes": d.peak_bytes }, gmt.bytes(d.peak_bytes)),
             " at " + gmt.duration(d.peak_time_ns) + (d.peak_phase ? " in " + d.peak_phase : "") +
             " \u00b7 live at exit " + gmt.bytes(d.live_at_exit_bytes) + " in " + d.live_at_exit_count +
             " allocations \u00b7 " + d.alloc_count + " allocations, " + d.free_count + " frees, " +
             d.failed_alloc_count + " failed"));
    const moment = gmt.el("div", { class: "moment" });
    const segments = d.allocations ? new gmt.Segments(t, d) : null;
    if (segments) this.segments.push(segments);
    const chart = new gmt.Timeline(t, d, (c, time, marker) => {
      this.showMoment(moment, t, d, c, time, marker);
      if (segments) segments.showAt(time, marker);
    });
    this.charts.push(chart);
    const ooms = chart.ooms.length;
    section.append(chart.root, gmt.el("p", { class: "note" },
      "Stacks are kept for the peak (\u25b2)" + (ooms > 0 ? " and for each failed allocation (\u2715)" : "") +
      ": click on a marker to see them. Any other moment shows its bytes " + (chart.stacks.role.length > 0 ? "by role or " : "") + "by owning library."), moment);
    if (d.allocations) {
      const life = gmt.el("div", { class: "life" });
      const bands = new gmt.Allocations(t, d, (c, hit) => {
        gmt.Report.showLife(life, c, hit);
        segments.showAt(hit.time, null);
      });
      this.allocations.push(bands);
      section.append(gmt.el("h4", null, "every allocation over time"), bands.root, life);
      if (segments.snapshots.length > 0) {
        section.append(gmt.el("h4", null, "the caching allocator's segments"), segments.root);
      }
      section.append(gmt.el("h4", null, "memory per step"), new gmt.Steps(t, d).root);
    }
    const flame = new gmt.Flame(d.flame, d.peak_bytes);
    this.flames.push(flame);
    section.append(gmt.el("div", { class: "columns" },
      gmt.el("div", { class: "column wide" }, gmt.el("h4", null, "live at the peak, by stack"), flame.root),
      gmt.el("div", { class: "column" }, gmt.viewsTable(d.views_at_peak_title, d.views_at_peak))));
    if (d.roles_at_peak) {
      section.append(gmt.el("div", { class: "columns" },
        gmt.el("div", { class: "column" }, gmt.el("h4", null, "by role at the peak"), gmt.roleTable(d.roles_at_peak)),
        gmt.el("div", { class: "column wide" },
               gmt.el("h4", null, "by module at the peak (made in its forward or held by its tensors)"),
               gmt.moduleTable(d.roles_at_peak))));
    }
    if (d.inference) section.append(gmt.inferenceLine(d.inference));
    return section;
  }

  static sites(sites, moreText) {
    const list = gmt.el("div", { class: "sites" });
    for (const s of sites) {
      list.append(gmt.el("div", { class: "site", "data-bytes": s.bytes,
                                  "data-function": s.frames.length > 0 ? s.frames[0][0] : "" },
        gmt.el("div", { class: "site-head" }, gmt.el("b", null, gmt.bytes(s.bytes)),
               " in " + s.count + (s.count === 1 ? " allocation" : " allocations") + " \u00b7 " + s.library),
        gmt.stackList(s)));
    }
    if (moreText) list.append(gmt.el("p", { class: "note" }, moreText));
    return list;
  }

  static libraryRows(entries) {
    return gmt.table(["library", "bytes"], entries.map(([name, bytes]) =>
      gmt.el("tr", { "data-library": name }, gmt.el("td", null,
        gmt.el("i", { class: "swatch", style: "background:" + gmt.libraryColour(name) }), name), gmt.bytesCell(bytes))),
      { class: "libraries" });
  }

  static roleRows(entries) {
    return gmt.table(["role", "bytes"], entries.map(([name, bytes]) =>
      gmt.el("tr", { "data-role": name }, gmt.el("td", null,
        gmt.el("i", { class: "swatch", style: "background:" + gmt.roleColour(name) }), name), gmt.bytesCell(bytes))),
      { class: "roles" });
  }

  // An allocation clicked in the allocation view: its whole life (when made and freed, the
  // phases open when it was made, the step it was made in) and its stack.
  static showLife(panel, chart, hit) {
    panel.replaceChildren();
    if (hit.item.kind !== "band") {
      panel.append(gmt.el("div", { class: "life-text" }, chart.describe(hit)));
      return;
    }
    const l = chart.life(hit.item.index);
    const steps = new gmt.Steps(chart.trace, chart.device);
    let step = "";
    if (steps.names.length > 0) {
      const rows = gmt.Steps.rows(chart.trace, chart.device, steps.names[0]);
      const at = rows.findIndex((r) => r.start_ns <= l.start_ns && r.end_ns >= l.start_ns);
      if (at >= 0) step = " \u00b7 made in step " + (at + 1) + " of " + steps.names[0];
    }
    panel.dataset.bytes = String(l.bytes);
    panel.append(gmt.el("h5", null, gmt.el("span", { class: "life-bytes", "data-bytes": l.bytes }, gmt.bytes(l.bytes)),
                        " (" + l.bytes + " bytes), " + l.role + (l.module ? " \u00b7 made in " + l.module + "'s forward" : "") +
                        " \u00b7 " + l.library + " \u00b7 " + l.line),
                 gmt.el("p", { class: "life-when" }, "made at " + gmt.duration(l.start_ns) +
                        (l.end_ns === null ? ", never freed" : ", freed at " + gmt.duration(l.end_ns) + " (lived " + gmt.duration(l.end_ns - l.start_ns) + ")") +
                        (l.phases.length > 0 ? " \u00b7 in " + l.phases.join(" > ") : "") + step),
                 gmt.stackList(l.stack || { frames: [], more_frames: 0, via: "" }));
  }

  showMoment(panel, t, d, chart, time, marker) {
    panel.replaceChildren();
    panel.dataset.timeNs = String(Math.round(time));
    panel.dataset.marker = marker ? marker.kind : "";
    const b = chart.bucketAt(time);
    if (marker && marker.kind === "peak") {
      panel.append(gmt.el("h4", null, "the peak: ", gmt.el("span", { class: "moment-bytes", "data-bytes": d.peak_bytes },
                                                           gmt.bytes(d.peak_bytes)),
                          " at " + gmt.duration(d.peak_time_ns) + (d.peak_phase ? " in " + d.peak_phase : "")));
      const split = d.roles_at_peak
        ? [gmt.el("h5", null, "by role"), gmt.roleTable(d.roles_at_peak)]
        : [];
      panel.append(gmt.el("div", { class: "columns" },
        gmt.el("div", { class: "column" }, ...split, gmt.el("h5", null, "by library"),
               gmt.Report.libraryRows(Object.entries(d.views_at_peak.by_library).sort((x, y) => y[1] - x[1]))),
        gmt.el("div", { class: "column wide" }, gmt.el("h5", null, "largest sites, with their stacks"),
               gmt.Report.sites(d.peak_sites, d.peak_sites_left_out > 0 ? d.peak_sites_left_out + " smaller sites in the flame graph" : ""))));
      return;
    }
    if (marker && marker.kind === "oom") {
      const o = chart.ooms[marker.oom];
      panel.append(gmt.el("h4", null, "failed allocation at " + gmt.duration(o.time_ns) + ": ",
                          gmt.el("span", { class: "moment-bytes", "data-bytes": o.requested_bytes }, gmt.bytes(o.requested_bytes)),
                          " requested (" + o.api + ", " + o.kind + "), " + gmt.bytes(o.live_bytes) + " live then"));
      panel.append(gmt.el("div", { class: "columns" },
        gmt.el("div", { class: "column" }, gmt.el("h5", null, "the failed call"), gmt.stackList(o)),
        gmt.el("div", { class: "column wide" }, gmt.el("h5", null, "largest holders then, with their stacks"),
               gmt.Report.sites(o.holders, ""))));
      const fixes = gmt.remediesList(t);
      if (fixes) panel.append(fixes);
      return;
    }
    const res = d.timeline.resolution_ns;
    panel.append(gmt.el("h4", null, "at " + gmt.duration(time) + ": ",
                        gmt.el("span", { class: "moment-bytes", "data-bytes": d.timeline.resident[b] },
                               gmt.bytes(d.timeline.resident[b])),
                        " (the most live between " + gmt.duration(b * res) + " and " + gmt.duration((b + 1) * res) + ")"));
    const rows = chart.layers.filter((l) => l.bytes[b] > 0).map((l) => [l.name, l.bytes[b]]);
    panel.append(chart.by === "role" ? gmt.Report.roleRows(rows) : gmt.Report.libraryRows(rows),
                 gmt.el("p", { class: "note" }, "Stacks are kept only for the peak and the failed allocations."));
  }

  draw() {
    for (const chart of this.charts) chart.draw();
    for (const flame of this.flames) flame.draw();
    for (const bands of this.allocations) bands.draw();
  }

  chart(trace, device) {
    return this.charts.find((c) => c.trace.index === trace && c.device.device === device) || null;
  }

  // #click=<ns>[&trace=<i>][&device=<ordinal>]: that moment selected, as if clicked.
  applyFragment() {
    const params = new URLSearchParams(window.location.hash.slice(1));
    if (!params.has("click")) return;
    const time = Number(params.get("click"));
    const chart = params.has("device") || params.has("trace")
      ? this.chart(Number(params.get("trace") || 0), Number(params.get("device") || 0))
      : this.charts[0];
    if (!chart || !Number.isFinite(time)) return;
    chart.select(time, chart.markerAt(time));
  }
};

(function start() {
  const data = JSON.parse(document.getElementById("gmt-data").textContent);
  const report = new gmt.Report(data);
  report.build(document.getElementById("report"));
  report.draw();
  report.applyFragment();
  window.addEventListener("hashchange", () => report.applyFragment());
  let pending = null;
  window.addEventListener("resize", () => {
    clearTimeout(pending);
    pending = setTimeout(() => report.draw(), 100);
  });
  // For scripts that drive the page (the browser test): the charts, and a flag once drawn.
  window.gmtReport = report;
  document.body.dataset.ready = "1";
})();

// Inference's figures (report --json's "inference"): the key-value cache, its bytes per token, and
// how many more tokens or sequences fit.
gmt.inferenceLine = function (f) {
  const parts = ["key-value cache " + gmt.bytes(f.kv_cache_bytes) + " (" + f.batch +
                 (f.batch === 1 ? " sequence" : " sequences") +
                 (f.tokens !== null ? " of " + f.tokens + " tokens" : "") + "), " +
                 gmt.bytes(f.bytes_per_token) + " per token per sequence"];
  if (f.capacity !== null) parts.push("preallocated for " + f.capacity + " tokens per sequence");
  else if (f.tokens_that_fit_by === "failure" && f.tokens_that_fit === 0)
    parts.push("no more tokens or sequences fit: the decode step at this length ran out of memory" +
               " (a request of " + gmt.bytes(f.ran_out_request_bytes) + " failed)");
  else if (f.tokens_that_fit_by === "failure")
    parts.push(f.tokens_that_fit + " more tokens per sequence fit: the decode loop went on to " +
               f.ran_out_tokens + " tokens per sequence and ran out of memory there");
  else if (f.tokens_that_fit !== null)
    parts.push(f.tokens_that_fit + " more tokens per sequence fit, or " + f.sequences_that_fit +
               " more sequences of this length");
  return gmt.el("p", { class: "inference" },
                gmt.el("b", null, "inference " + (f.at_exit ? "at exit" : "at the peak") + ": "),
                parts.join("; "));
};
