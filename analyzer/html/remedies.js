// SPDX-License-Identifier: Apache-2.0
// What would make a failed run fit, as the allocator's model predicts it (trace.remedies: `oom
// --json`'s "remedies" and "remedies_note"): shown beside the failure, in the segments view and
// in the failed allocation's panel, the cheapest first.

gmt.remediesList = function (trace) {
  const r = trace.remedies;
  if (!r || !r.remedies) return null;
  const box = gmt.el("div", { class: "remedies" });
  if (r.remedies.length === 0) {
    if (r.remedies_note) box.append(gmt.el("p", { class: "note" }, "remedies: none: " + r.remedies_note));
    return box.childNodes.length > 0 ? box : null;
  }
  box.append(gmt.el("h5", null, "what would make it fit, as the allocator's model predicts it (the cheapest first)"));
  const rows = r.remedies.map((x) => gmt.el("tr", { "data-change": x.change, "data-fits": String(x.fits) },
    gmt.cell(x.change), gmt.cell(x.fits ? "fits" : x.too_close ? "too close to call" : "does not fit", { class: x.fits ? "fits" : x.too_close ? "warn" : "error" }),
    gmt.bytesCell(x.predicted_max_reserved_bytes), gmt.bytesCell(x.saves_bytes),
    gmt.cell(x.note, { class: "note" }), gmt.cell("whatif " + x.whatif, { class: "command" })));
  box.append(gmt.table(["change", "", "reserved at most", "saves", "", "predicted by"], rows, { class: "remedies-table" }));
  return box;
};
