// SPDX-License-Identifier: Apache-2.0
// The icicle of what was live at a device's peak: the device at the top, each stack from its
// outermost frame down to the allocating one, widths in bytes. Click a frame to make it the
// whole width; click the top row to go back up. Nodes are [parent, bytes, label, where], each
// after its parent; each label carries its file:line. What the data left out of a node is
// grouped by the line that allocated it ("(stacks at) f"), then by library ("(stacks in) lib"),
// and only the rest is "(smaller stacks)", so rows still add up.

gmt.Flame = class {
  constructor(nodes, total) {
    this.nodes = nodes.map(([parent, bytes, label, where], i) => ({ i, parent, bytes, label, where, children: [] }));
    for (const n of this.nodes) if (n.parent >= 0) this.nodes[n.parent].children.push(n);
    for (const n of this.nodes) n.children.sort((a, b) => b.bytes - a.bytes);
    this.total = total;
    this.root = gmt.el("div", { class: "flame", "data-total-bytes": this.nodes.length > 0 ? this.nodes[0].bytes : 0 });
    this.focus = this.nodes.length > 0 ? this.nodes[0] : null;
    this.rowHeight = 18;
  }

  depth(node) {
    let d = 0;
    for (const c of node.children) d = Math.max(d, this.depth(c) + 1);
    return d;
  }

  draw() {
    this.root.replaceChildren();
    if (!this.focus) {
      this.root.append(gmt.el("p", { class: "note" }, "Nothing was live at the peak."));
      return;
    }
    const width = Math.max(this.root.clientWidth, 300);
    // The focused node's ancestors, full width, above it.
    const path = [];
    for (let n = this.focus; n; n = n.parent >= 0 ? this.nodes[n.parent] : null) path.unshift(n);
    const rows = path.length + this.depth(this.focus);
    this.root.style.height = rows * this.rowHeight + "px";
    path.forEach((n, row) => this.box(n, 0, width, row, n !== this.focus));
    const place = (node, x, row) => {
      let at = x;
      for (const c of node.children) {
        const w = (c.bytes / this.focus.bytes) * width;
        if (w >= 1) {
          this.box(c, at, w, row, false);
          place(c, at, row + 1);
        }
        at += w;
      }
    };
    place(this.focus, 0, path.length);
  }

  box(node, x, w, row, ancestor) {
    const share = this.total > 0 ? ((100 * node.bytes) / this.total).toFixed(1) + " %" : "";
    const title = node.label + (node.where ? "\n" + node.where : "") + "\n" + gmt.bytes(node.bytes) +
                  " (" + node.bytes + " bytes, " + share + " of the peak)";
    const colour = node.label === "(smaller stacks)" ? "hsl(0,0%,82%)"
                   : ancestor ? "hsl(0,0%,88%)" : gmt.colour(node.label, 70, 72);
    const div = gmt.el("div", {
      class: "frame" + (ancestor ? " ancestor" : ""),
      title,
      "data-bytes": node.bytes,
      style: "left:" + x + "px;width:" + Math.max(w - 1, 0.5) + "px;top:" + row * this.rowHeight +
             "px;background:" + colour,
    }, w > 40 ? node.label + (node.where ? " \u00b7 " + node.where : "") + " " + gmt.bytes(node.bytes) : "");
    div.addEventListener("click", () => {
      // An ancestor or a descendant becomes the focus; the focus itself gives way to its parent.
      this.focus = node === this.focus && node.parent >= 0 ? this.nodes[node.parent] : node;
      this.draw();
    });
    this.root.append(div);
  }
};
