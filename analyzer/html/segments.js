// SPDX-License-Identifier: Apache-2.0
// A caching allocator's segments at a moment (device.allocations.snapshots, taken by
// allocation_pass.cpp at the peak, at each failure and at evenly spaced moments): each segment
// a bar of its blocks (coloured by role) and its free pieces, the largest free piece outlined,
// and at a failure the request drawn beside it to the same scale, so that a request larger than
// every free piece (fragmentation) can be seen.

gmt.Segments = class {
  constructor(trace, device) {
    this.trace = trace;
    this.device = device;
    this.snapshots = device.allocations ? device.allocations.snapshots : [];
    this.root = gmt.el("div", { class: "segments" });
    this.menu = gmt.el("select", { class: "segment-moment" });
    this.snapshots.forEach((s, i) => {
      this.menu.append(gmt.el("option", { value: i }, gmt.Segments.title(s)));
    });
    this.menu.addEventListener("change", () => this.show(Number(this.menu.value)));
    this.body = gmt.el("div", { class: "segment-body" });
    this.root.append(gmt.el("div", { class: "toolbar" }, "moment: ", this.menu,
                            gmt.el("span", { class: "help" }, "a click on a timeline shows the segments at the moment nearest before it")),
                     this.body);
    // The first failure if any (where the segments matter most), else the peak.
    const failure = this.snapshots.findIndex((s) => s.kind === "failure");
    const peak = this.snapshots.findIndex((s) => s.kind === "peak");
    this.show(failure >= 0 ? failure : Math.max(peak, 0));
  }

  static title(s) {
    const what = s.kind === "peak" ? "the peak" : s.kind === "failure" ? "failed allocation" : "moment";
    return what + " at " + gmt.duration(s.time_ns);
  }

  // The snapshot for a moment of the timeline: a marker's own, else the last one at or before
  // it (the first when none is).
  showAt(time, marker) {
    if (this.snapshots.length === 0) return;
    let index = -1;
    if (marker) {
      const kind = marker.kind === "peak" ? "peak" : "failure";
      let best = Infinity;
      this.snapshots.forEach((s, i) => {
        const d = Math.abs(s.time_ns - time);
        if (s.kind === kind && d < best) { best = d; index = i; }
      });
    }
    if (index < 0) {
      index = 0;
      this.snapshots.forEach((s, i) => { if (s.time_ns <= time) index = i; });
    }
    this.show(index);
  }

  show(index) {
    this.body.replaceChildren();
    const s = this.snapshots[index];
    if (!s) {
      this.body.append(gmt.el("p", { class: "note" }, "No caching allocator reported its segments on this device: each allocation is its own driver allocation, drawn above."));
      return;
    }
    this.menu.value = String(index);
    this.root.dataset.kind = s.kind;
    this.root.dataset.timeNs = String(s.time_ns);
    this.root.dataset.largestFreeBytes = String(s.largest_free_bytes);
    this.root.dataset.requestBytes = String(s.request_bytes);
    let reserved = 0;
    for (const seg of s.segments) reserved += seg.size;
    const summary = [s.segments.length + (s.segments.length === 1 ? " segment, " : " segments, ") +
                     gmt.bytes(reserved) + " reserved, " + gmt.bytes(s.free_bytes) + " of it free; largest free piece ",
                     gmt.el("b", { class: "largest-free", "data-bytes": s.largest_free_bytes }, gmt.bytes(s.largest_free_bytes))];
    if (s.kind === "failure" && s.request_bytes > 0) {
      summary.push(" \u00b7 the request: ", gmt.el("b", { class: "request", "data-bytes": s.request_bytes }, gmt.bytes(s.request_bytes)),
                   s.request_bytes > s.largest_free_bytes
                     ? (s.request_bytes <= s.free_bytes ? " \u2014 fragmentation: enough bytes are free, but in no one piece" : " \u2014 more than the cache held free")
                     : "");
    }
    this.body.append(gmt.el("p", { class: "segment-summary" }, summary));
    if (s.segments_left_out > 0) {
      this.body.append(gmt.el("p", { class: "note" }, s.segments_left_out + " more segments not drawn (" + s.pieces_left_out + " pieces)"));
    }
    // One scale for every bar: the largest segment, or the request when larger, fills the width.
    let largest = s.kind === "failure" ? s.request_bytes : 0;
    for (const seg of s.segments) largest = Math.max(largest, seg.size);
    const share = (bytes) => (100 * bytes) / Math.max(largest, 1) + "%";
    let markedLargest = false;
    for (const seg of s.segments) {
      const bar = gmt.el("div", { class: "segment-bar", style: "width:" + share(seg.size) });
      for (const p of seg.pieces) {
        const free = p.length === 2;
        const isLargest = free && !markedLargest && p[1] === s.largest_free_bytes;
        if (isLargest) markedLargest = true;
        const site = free ? null : this.trace.allocation_sites[p[2]];
        const title = (free ? "free " : p[3] + " block ") + gmt.bytes(p[1]) + " (" + p[1] + " bytes) at +" + p[0] +
                      (site ? "\n" + site.line + " \u00b7 " + site.library : "") + (isLargest ? "\nthe largest free piece" : "");
        bar.append(gmt.el("div", {
          class: "piece" + (free ? " free" : "") + (isLargest ? " largest" : ""),
          title, "data-bytes": p[1], "data-role": free ? null : p[3],
          style: "left:" + (100 * p[0]) / seg.size + "%;width:" + (100 * p[1]) / seg.size + "%" +
                 (free ? "" : ";background:" + gmt.roleColour(p[3])),
        }));
      }
      this.body.append(gmt.el("div", { class: "segment-row" },
        gmt.el("span", { class: "segment-label" }, gmt.bytes(seg.size) + (seg.expandable ? " (expandable)" : "") + " " + seg.allocator),
        bar));
    }
    if (s.kind === "failure" && s.request_bytes > 0) {
      this.body.append(gmt.el("div", { class: "segment-row request-row" },
        gmt.el("span", { class: "segment-label" }, "requested " + gmt.bytes(s.request_bytes)),
        gmt.el("div", { class: "segment-bar request-bar", style: "width:" + share(s.request_bytes) })));
    }
    const fixes = s.kind === "failure" ? gmt.remediesList(this.trace) : null;
    if (fixes) this.body.append(fixes);
  }
};
