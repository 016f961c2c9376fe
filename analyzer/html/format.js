// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the report page: how bytes and times are written (as the text report writes
// them), and a small element builder. Every other script adds its functions to `gmt`.
"use strict";

const gmt = {};

// "1.50 GiB", "512 B": binary units, three significant digits (byte_size.cpp's human_bytes).
gmt.bytes = function (n) {
  if (n === null || n === undefined) return "missing";
  if (n < 0) return "-" + gmt.bytes(-n);
  if (n < 1024) return n + " B";
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit + 1 < units.length) {
    value /= 1024;
    unit += 1;
  }
  const digits = value < 10 ? 2 : value < 100 ? 1 : 0;
  return value.toFixed(digits) + " " + units[unit];
};

// "1.234 s", "15.0 ms", "12.0 us" (human_duration).
gmt.duration = function (ns) {
  if (ns < 1e6) return (ns / 1e3).toFixed(1) + " us";
  if (ns < 1e9) return (ns / 1e6).toFixed(1) + " ms";
  return (ns / 1e9).toFixed(3) + " s";
};

// el("td", {class: "num", "data-bytes": 12}, "text", childNode...): attributes whose value is
// null or undefined are left out; children may be strings, nodes, arrays or null.
gmt.el = function (tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== null && value !== undefined) node.setAttribute(key, String(value));
  }
  const add = (child) => {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) {
      child.forEach(add);
    } else {
      node.append(child instanceof Node ? child : String(child));
    }
  };
  children.forEach(add);
  return node;
};

// A stable colour per name, so that a library keeps its colour in every chart of the page.
gmt.colour = function (name, saturation, lightness) {
  let hash = 0;
  for (let i = 0; i < name.length; i += 1) hash = (hash * 31 + name.charCodeAt(i)) >>> 0;
  return "hsl(" + (hash % 360) + "," + saturation + "%," + lightness + "%)";
};

// The layer of libraries past the top ones gets grey, whatever its name hashes to.
gmt.libraryColour = function (name) {
  return name === "other" ? "hsl(0,0%,70%)" : gmt.colour(name, 55, 62);
};

// Each role's colour, the same in every chart and table: what the model keeps (parameters,
// gradients, optimizer state) in blues and reds, what a step makes in greens, what inference
// keeps across forwards (its key-value cache, a model's state) in cyan and olive, the rest in greys.
gmt.roleColours = {
  parameter: "#1f77b4", buffer: "#9ecae1", gradient: "#ff7f0e", optimizer_state: "#d62728",
  activation: "#2ca02c", temporary: "#98df8a", input: "#9467bd", allocator_cache: "#c7c7c7",
  library: "#8c564b", cuda_graph: "#e377c2", kv_cache: "#17becf", state: "#bcbd22",
  output: "#dbdb8d", unknown: "#7f7f7f",
};
gmt.roleColour = function (name) {
  return gmt.roleColours[name] || "#7f7f7f";
};

gmt.deviceName = function (ordinal) {
  return ordinal >= 0 ? "device " + ordinal : "no device";
};

// A stack as the page prints it: one frame per line, from the first frame in the user's code
// (the frames below it are the `via` line under it) out to the program's entry.
gmt.stackList = function (stack) {
  const list = gmt.el("ol", { class: "frames" });
  if (!stack.frames || stack.frames.length === 0) {
    list.append(gmt.el("li", { class: "function" }, "(no stack recorded)"));
    return list;
  }
  // The first frames say who allocated; the callers further out open on demand.
  const shown = 8;
  const frame = ([fn, where]) =>
    gmt.el("li", null, gmt.el("span", { class: "function" }, fn), " ",
           where ? gmt.el("span", { class: "where" }, where) : null);
  stack.frames.slice(0, shown).forEach((f) => list.append(frame(f)));
  if (stack.via) list.firstChild.append(gmt.el("div", { class: "via" }, stack.via));
  const rest = stack.frames.length - shown + stack.more_frames;
  if (rest > 0) {
    const more = gmt.el("ol", { class: "frames", start: shown + 1 }, stack.frames.slice(shown).map(frame));
    if (stack.more_frames > 0) {
      more.append(gmt.el("li", { class: "more" }, "... " + stack.more_frames + " more frames"));
    }
    list.append(gmt.el("li", { class: "more" },
                       gmt.el("details", null, gmt.el("summary", null, rest + " more frames"), more)));
  }
  return list;
};
