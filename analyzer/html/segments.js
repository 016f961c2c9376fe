// SPDX-License-Identifier: Apache-2.0
// A caching allocator's segments at a moment (device.allocations.snapshots, taken by
// allocation_pass.cpp at the peak, at each failure and at evenly spaced moments): each segment
// a bar of its blocks (coloured by role) and its free pieces, the largest free piece outlined,
// and at a failure the request drawn beside it to the same scale, so that a request larger than
// every free piece (fragmentation) can be seen. A segment of expandable segments (pages mapped
// into a reserved range) and one of a CUDA graph's private pool (taken during its capture, its
// blocks used only by the graph's replays) are marked as such: neither serves other requests as
// an ordinary segment does.

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
    // The first failure if any (where the segments matter most), else where the allocators
    // handed out the most, else the peak.
    const failure = this.snapshots.findIndex((s) => s.kind === "failure");
    const highest = this.snapshots.findIndex((s) => s.kind === "highest_allocated");
    const peak = this.snapshots.findIndex((s) => s.kind === "peak");
    this.show(failure >= 0 ? failure : highest >= 0 ? highest : Math.max(peak, 0));
  }

  // What kind of segment it is beyond an ordinary one: "expandable", "graph_pool" (either may be).
  static kinds(seg) {
    return [seg.expandable ? "expandable" : null, seg.graph_pool ? "graph_pool" : null].filter((k) => k);
  }

  static title(s) {
    const what = s.kind === "peak" ? "the peak" : s.kind === "highest_allocated" ? "the most allocated"
      : s.kind === "failure" ? "failed allocation" : "moment";
    return what + " at " + gmt.duration(s.time_ns);
  }

  // The segments at `time` from the data itself, or null: where every block of the device is
  // kept whole and every segment's life is known, a moment's segments follow from them exactly.
  static at(trace, device, time) {
    const a = device.allocations;
    if (!a || !a.blocks_whole || !a.segment_spans) return null;
    const sp = a.segment_spans;
    const segments = [];
    for (let i = 0; i < sp.start.length; i += 1) {
      if (sp.start[i] <= time && (sp.end[i] < 0 || sp.end[i] > time)) {
        segments.push({ address: sp.address[i], size: sp.size[i], allocator: sp.allocator[i], expandable: sp.expandable[i],
                        graph_pool: sp.graph_pool ? sp.graph_pool[i] : false, pieces: [] });
      }
    }
    if (segments.length === 0) return null;
    segments.sort((x, y) => x.address - y.address);
    const b = a.bands;
    const blocks = [];
    for (let i = 0; i < b.start.length; i += 1) {
      const site = trace.allocation_sites[b.site[i]];
      if (!site || site.allocator === undefined) continue;
      if (b.start[i] <= time && (b.end[i] < 0 || b.end[i] > time)) blocks.push(i);
    }
    blocks.sort((x, y) => b.address[x] - b.address[y]);
    const out = { kind: "moment", time_ns: time, request_bytes: 0, free_bytes: 0, largest_free_bytes: 0,
                  segments_left_out: 0, pieces_left_out: 0, segments, computed: true };
    let next = 0;
    for (const seg of segments) {
      const end = seg.address + seg.size;
      while (next < blocks.length && b.address[blocks[next]] < seg.address) next += 1;
      let at = seg.address;
      for (; next < blocks.length && b.address[blocks[next]] < end; next += 1) {
        const i = blocks[next];
        if (b.address[i] > at) seg.pieces.push([at - seg.address, b.address[i] - at]);
        const size = Math.min(b.size[i], end - b.address[i]);
        seg.pieces.push([b.address[i] - seg.address, size, b.site[i], a.roles[b.role[i]]]);
        at = Math.max(at, b.address[i] + size);
      }
      if (at < end) seg.pieces.push([at - seg.address, end - at]);
      for (const p of seg.pieces) {
        if (p.length !== 2) continue;
        out.free_bytes += p[1];
        out.largest_free_bytes = Math.max(out.largest_free_bytes, p[1]);
      }
    }
    return out;
  }

  // The segments at a moment of the timeline: a marker's own snapshot; else, where the data
  // gives them, the segments at that moment exactly; else the last snapshot at or before it
  // (the first when none is).
  showAt(time, marker) {
    if (this.snapshots.length === 0) return;
    if (!marker) {
      const exact = gmt.Segments.at(this.trace, this.device, time);
      if (exact) {
        this.render(exact);
        return;
      }
    }
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
    const s = this.snapshots[index];
    if (s) this.menu.value = String(index);
    this.render(s);
  }

  render(s) {
    this.body.replaceChildren();
    if (!s) {
      this.body.append(gmt.el("p", { class: "note" }, "No caching allocator reported its segments on this device: each allocation is its own driver allocation, drawn above."));
      return;
    }
    if (s.computed) {
      this.body.append(gmt.el("p", { class: "note computed" }, "at " + gmt.duration(s.time_ns) + ", from every block and segment's life"));
    }
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
      const kinds = gmt.Segments.kinds(seg);
      if (kinds.length > 0) bar.classList.add(...kinds.map((k) => k.replace("_", "-")));
      this.body.append(gmt.el("div", { class: "segment-row", "data-kinds": kinds.join(" ") },
        gmt.el("span", { class: "segment-label" }, gmt.bytes(seg.size) + " " + seg.allocator,
               kinds.map((k) => [" ", gmt.el("span", { class: "segment-kind", "data-kind": k,
                                                      title: gmt.Segments.kindNotes[k] }, gmt.Segments.kindNames[k])])),
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

gmt.Segments.kindNames = { expandable: "expandable", graph_pool: "CUDA graph pool" };
gmt.Segments.kindNotes = {
  expandable: "expandable segments: pages mapped into a reserved range, grown and shrunk in place",
  graph_pool: "taken while a CUDA graph was captured: the graph's private pool, whose blocks only its replays use",
};
