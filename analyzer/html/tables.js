// SPDX-License-Identifier: Apache-2.0
// The report's tables: the views at the peak (the rows and meanings of the text report's views
// table), the roles and modules at the peak, phases, leaks, failed allocations and the
// processes of a run.

gmt.table = function (headings, rows, attrs) {
  const head = gmt.el("tr", null, headings.map((h) => gmt.el("th", null, h)));
  return gmt.el("table", attrs || null, gmt.el("thead", null, head), gmt.el("tbody", null, rows));
};

gmt.cell = function (value, attrs) {
  return gmt.el("td", attrs || null, value);
};

gmt.bytesCell = function (bytes) {
  return gmt.el("td", { class: "num", "data-bytes": bytes, title: bytes === null ? null : bytes + " bytes" },
                gmt.bytes(bytes));
};

// views_json's object (docs/commands.md: "The views table"), as the text report lays it out.
gmt.viewsTable = function (title, v) {
  const rows = [];
  const row = (label, value, note, key) => {
    rows.push(gmt.el("tr", { "data-view": key || null }, gmt.cell(label),
                     gmt.bytesCell(value === undefined ? null : value), gmt.cell(note || "", { class: "note" })));
  };
  row("framework allocated", v.framework_allocated_bytes,
      v.framework_allocated_bytes === null ? "(no gpumemtrace_framework_view report)" : "",
      "framework_allocated_bytes");
  row("framework reserved", v.framework_reserved_bytes, "", "framework_reserved_bytes");
  row("tracked (all allocations)", v.tracked_bytes, "", "tracked_bytes");
  for (const [library, bytes] of Object.entries(v.by_library)) {
    row("\u00a0\u00a0owned by " + library, bytes, "", "by_library." + library);
  }
  row("NVML, this process", v.nvml_process_bytes, "", "nvml_process_bytes");
  row("driver used (cuMemGetInfo)", v.driver_used_bytes, "", "driver_used_bytes");
  row("NVML, whole device", v.nvml_device_used_bytes, "", "nvml_device_used_bytes");
  if (v.pool_reserved_bytes !== null || v.pool_used_bytes !== null) {
    row("stream-ordered pool reserved", v.pool_reserved_bytes, "used " + gmt.bytes(v.pool_used_bytes),
        "pool_reserved_bytes");
  }
  if (v.graph_reserved_bytes !== null || v.graph_used_bytes !== null) {
    row("graph memory reserved", v.graph_reserved_bytes, "used " + gmt.bytes(v.graph_used_bytes),
        "graph_reserved_bytes");
  }
  rows.push(gmt.el("tr", null, gmt.el("td", { colspan: 3, class: "subhead" }, "where the differences go:")));
  row("\u00a0\u00a0framework cache (reserved-alloc)", v.framework_cache_bytes, "", "framework_cache_bytes");
  row("\u00a0\u00a0outside the framework", v.outside_framework_bytes, "tracked - framework reserved",
      "outside_framework_bytes");
  row("\u00a0\u00a0context and module overhead", v.context_overhead_bytes, "NVML process - tracked",
      "context_overhead_bytes");
  row("\u00a0\u00a0other processes", v.other_processes_bytes, "", "other_processes_bytes");
  let caption = title;
  if (v.sample_time_ns === null) {
    caption += ": no sample of the other views (sampler off, or the process ended first)";
  } else if (!v.exact) {
    caption += " (allocations changed while the views were read: approximate)";
  }
  const table = gmt.table(["view", "bytes", ""], rows, { class: "views" });
  table.prepend(gmt.el("caption", null, caption));
  return table;
};

gmt.phasesTable = function (phases) {
  return gmt.table(["phase", "device", "calls", "peak", "growth (all calls)"], phases.map((p) =>
    gmt.el("tr", null, gmt.cell(p.name), gmt.cell(p.device, { class: "num" }), gmt.cell(p.calls, { class: "num" }),
           gmt.bytesCell(p.peak_bytes), gmt.bytesCell(p.growth_bytes))), { class: "phases" });
};

// A stack folded into its first frame; the rest on demand.
gmt.stackCell = function (stack) {
  // A caching allocator's free cache has no stack: it is named for what it is.
  const first = stack.frames && stack.frames.length > 0 ? stack.frames[0][0]
    : stack.level === "cache" ? stack.library : "(no stack recorded)";
  if ((!stack.frames || stack.frames.length <= 1) && !stack.via) return gmt.cell(first, { class: "function" });
  return gmt.el("td", null, gmt.el("details", null, gmt.el("summary", { class: "function" }, first),
                                   gmt.stackList(stack)));
};

gmt.leaksTable = function (leaks) {
  return gmt.table(["class", "device", "bytes", "allocations", "library", "growth", "where"], leaks.map((g) =>
    gmt.el("tr", { "data-class": g.class }, gmt.cell(g.class), gmt.cell(gmt.deviceName(g.device)),
           gmt.bytesCell(g.bytes), gmt.cell(g.count, { class: "num" }), gmt.cell(g.library),
           gmt.cell(g.class === "probable_leak" ? gmt.bytes(Math.round(g.growth_bytes_per_s)) + "/s" : ""),
           gmt.stackCell(g))), { class: "leaks" });
};

gmt.oomsTable = function (ooms) {
  return gmt.table(["time", "device", "api", "kind", "requested", "live then", "where"], ooms.map((o) =>
    gmt.el("tr", null, gmt.cell(gmt.duration(o.time_ns)), gmt.cell(gmt.deviceName(o.device)), gmt.cell(o.api),
           gmt.cell(o.kind), gmt.bytesCell(o.requested_bytes), gmt.bytesCell(o.live_bytes), gmt.stackCell(o))),
    { class: "ooms" });
};

// One row per process and device, the highest peak marked, and the run's totals.
gmt.processTable = function (rows) {
  let peaks = 0;
  let leaks = 0;
  let ooms = 0;
  const body = rows.map((r) => {
    peaks += r.peak_bytes;
    leaks += r.leaked_bytes;
    ooms += r.ooms;
    return gmt.el("tr", { class: r.highest ? "highest" : null, "data-pid": r.pid },
                  gmt.el("td", null, gmt.el("a", { href: "#trace-" + r.trace }, String(r.pid))),
                  gmt.cell(r.rank === null ? "-" : r.rank), gmt.cell(r.device >= 0 ? r.device : "?"),
                  gmt.bytesCell(r.peak_bytes), gmt.bytesCell(r.leaked_bytes), gmt.cell(r.ooms, { class: "num" }),
                  gmt.cell(r.highest ? "\u2190 highest peak" : ""));
  });
  body.push(gmt.el("tr", { class: "total" }, gmt.el("td", { colspan: 3 }, "total (sum of peaks)"),
                   gmt.bytesCell(peaks), gmt.bytesCell(leaks), gmt.cell(ooms, { class: "num" }), gmt.cell("")));
  return gmt.table(["pid", "rank", "device", "peak", "leaks", "OOMs", ""], body, { class: "processes" });
};

// The job view (report's `job`): the highest peak against the median, the job's first failed
// allocation, and the sites never freed merged across the processes.
gmt.jobView = function (job) {
  const who = (p) => (p.rank === null ? "pid " + p.pid : "rank " + p.rank + " (pid " + p.pid + ")");
  const device = (n) => (n >= 0 ? "device " + n : "device unknown");
  const view = gmt.el("div", { class: "job" });
  const h = job.highest_peak;
  if (h) {
    view.append(gmt.el("p", { class: "job-highest" }, "highest peak " + gmt.bytes(h.peak_bytes) + " on " +
                       who(h) + " " + device(h.device) + ": " + gmt.bytes(h.excess_over_median_bytes) +
                       " over the median " + gmt.bytes(job.median_peak_bytes) +
                       (job.spread === null ? "" : ", spread " + job.spread.toFixed(2) + "x")));
  }
  const o = job.first_oom;
  if (o) {
    view.append(gmt.el("p", { class: "job-oom" }, "first OOM " + new Date(o.wall_time_ns / 1e6).toISOString() +
                       " on " + who(o) + " " + device(o.device) + ": " + gmt.bytes(o.requested_bytes) +
                       " asked in " + o.site));
  }
  if (job.leak_sites.length > 0) {
    const body = job.leak_sites.map((s) => gmt.el("tr", null, gmt.cell(s.site),
      gmt.cell(s.processes + " of " + job.processes, { class: "num" }),
      gmt.cell(s.min_bytes === s.max_bytes ? gmt.bytes(s.min_bytes) :
               gmt.bytes(s.min_bytes) + " to " + gmt.bytes(s.max_bytes), { class: "num" }),
      gmt.bytesCell(s.bytes)));
    view.append(gmt.el("h3", null, "never freed, by site across the processes"),
                gmt.table(["site", "processes", "each", "in all"], body, { class: "job-leaks" }));
  }
  return view;
};

// roles_json's object (docs/roles.md): each role that holds bytes, largest first,
// with how it is known.
gmt.roleTable = function (roles) {
  const rows = roles.by_role.filter((r) => r.bytes > 0).sort((a, b) => b.bytes - a.bytes).map((r) =>
    gmt.el("tr", { "data-role": r.role },
           gmt.el("td", null, gmt.el("i", { class: "swatch", style: "background:" + gmt.roleColour(r.role) }), r.role),
           gmt.bytesCell(r.bytes), gmt.cell(r.how, { class: "note" })));
  return gmt.table(["role", "bytes", "how it is known"], rows, { class: "roles" });
};

// Each module's bytes by role, a column per role that any module holds.
gmt.moduleTable = function (roles) {
  if (roles.by_module.length === 0) return gmt.el("p", { class: "note" }, "No block was made in a module's forward.");
  const shown = roles.by_role.map((r) => r.role)
    .filter((role) => roles.by_module.some((m) => (m.by_role[role] || 0) > 0));
  const rows = roles.by_module.map((m) =>
    gmt.el("tr", { "data-module": m.module }, gmt.cell(m.module), gmt.bytesCell(m.bytes),
           shown.map((role) => gmt.bytesCell(m.by_role[role] || 0))));
  return gmt.table(["module", "bytes"].concat(shown), rows, { class: "modules" });
};
