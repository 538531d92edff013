"use strict";
(function () {
  function cellKey(row, i) {
    var cell = row.cells[i];
    if (!cell) { return ""; }
    var key = cell.getAttribute("data-sort");
    return key === null ? cell.textContent.trim() : key;
  }
  function compare(a, b) {
    var x = parseFloat(a), y = parseFloat(b);
    var xn = a !== "" && isFinite(a) && !isNaN(x), yn = b !== "" && isFinite(b) && !isNaN(y);
    if (xn && yn) { return x - y; }
    if (xn !== yn) { return xn ? 1 : -1; }
    return a.localeCompare(b);
  }
  function sortBy(table, index, button) {
    var body = table.tBodies[0];
    var dir = button.getAttribute("data-dir") === "asc" ? "desc" : "asc";
    var buttons = table.querySelectorAll("th button");
    for (var j = 0; j < buttons.length; j++) {
      buttons[j].removeAttribute("data-dir");
      buttons[j].parentNode.removeAttribute("aria-sort");
    }
    button.setAttribute("data-dir", dir);
    button.parentNode.setAttribute("aria-sort", dir === "asc" ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var c = compare(cellKey(r1, index), cellKey(r2, index));
      return dir === "asc" ? c : -c;
    });
    for (var k = 0; k < rows.length; k++) { body.appendChild(rows[k]); }
  }
  var tables = document.querySelectorAll("table.sortable");
  for (var t = 0; t < tables.length; t++) {
    (function (table) {
      var heads = table.tHead ? table.tHead.rows[0].cells : [];
      for (var i = 0; i < heads.length; i++) {
        (function (index) {
          var button = heads[index].querySelector("button");
          if (button) {
            button.addEventListener("click", function () { sortBy(table, index, button); });
          }
        })(i);
      }
    })(tables[t]);
  }
  // a picture that fails to load is a broken report: say so where a browser test looks
  function missing(img) { console.error("aisp-prof report: image not found: " + img.getAttribute("src")); }
  var images = document.images;
  for (var m = 0; m < images.length; m++) {
    (function (img) {
      if (img.complete) {
        if (img.naturalWidth === 0) { missing(img); }
      } else {
        img.addEventListener("error", function () { missing(img); });
      }
    })(images[m]);
  }
  // the index's filters: a chapter, a card, or a count of the chapter x card overview (both)
  var filter = document.getElementById("chapter-filter");
  var cardFilter = document.getElementById("card-filter");
  function applyFilters() {
    var want = filter.value, card = cardFilter ? cardFilter.value : "";
    var rows = document.querySelectorAll("#pairs tbody tr");
    var shown = 0;
    for (var r = 0; r < rows.length; r++) {
      var show = (want === "" || rows[r].getAttribute("data-chapter") === want) &&
                 (card === "" || rows[r].getAttribute("data-card") === card);
      rows[r].hidden = !show;
      if (show) { shown++; }
    }
    var count = document.getElementById("shown-count");
    if (count) { count.textContent = String(shown); }
  }
  if (filter) {
    filter.addEventListener("change", applyFilters);
    if (cardFilter) { cardFilter.addEventListener("change", applyFilters); }
    var picks = document.querySelectorAll("button.group-pick");
    for (var p = 0; p < picks.length; p++) {
      (function (pick) {
        pick.addEventListener("click", function () {
          filter.value = pick.getAttribute("data-chapter");
          if (cardFilter) { cardFilter.value = pick.getAttribute("data-card"); }
          applyFilters();
        });
      })(picks[p]);
    }
  }
  // the roofline's tooltip (kernel, variant, intensity, FLOP/s, % of roof) and its roof toggles
  var wraps = document.querySelectorAll(".svgwrap");
  for (var w = 0; w < wraps.length; w++) {
    (function (wrap) {
      var tip = wrap.querySelector(".roof-tip");
      wrap.addEventListener("mousemove", function (e) {
        var g = e.target.closest ? e.target.closest("g.pt") : null;
        if (!g) { tip.hidden = true; return; }
        while (tip.firstChild) { tip.removeChild(tip.firstChild); }
        var lines = [g.getAttribute("data-variant") + ": " + g.getAttribute("data-kernel"),
                     "intensity " + g.getAttribute("data-ai") + ", " + g.getAttribute("data-flops"),
                     g.getAttribute("data-pct")];
        for (var i = 0; i < lines.length; i++) {
          var d = document.createElement("div");
          d.textContent = lines[i];
          tip.appendChild(d);
        }
        var box = wrap.getBoundingClientRect();
        var x = e.clientX - box.left + 12, y = e.clientY - box.top + 12;
        tip.hidden = false;
        if (x + tip.offsetWidth > box.width) { x = Math.max(0, e.clientX - box.left - tip.offsetWidth - 12); }
        tip.style.left = x + "px";
        tip.style.top = y + "px";
      });
      wrap.addEventListener("mouseleave", function () { tip.hidden = true; });
    })(wraps[w]);
  }
  // a checkbox per roof the SVG draws (a memory level or a precision), made from the SVG itself
  var names = {dram: "DRAM", l2: "L2", l1: "L1"};
  var boxes = document.querySelectorAll("figure.iroof .roof-boxes");
  for (var b = 0; b < boxes.length; b++) {
    var seen = {}, roofGroups = boxes[b].closest("figure").querySelectorAll("g.roof");
    boxes[b].appendChild(document.createTextNode("Show: "));
    for (var q = 0; q < roofGroups.length; q++) {
      var key = roofGroups[q].getAttribute("data-roof");
      if (seen[key]) { continue; }
      seen[key] = true;
      var label = document.createElement("label"), input = document.createElement("input");
      input.type = "checkbox"; input.className = "roof-toggle"; input.checked = true;
      input.setAttribute("data-roof", key);
      label.appendChild(input);
      label.appendChild(document.createTextNode(" " + (names[key] || key)));
      boxes[b].appendChild(label);
    }
  }
  var toggles = document.querySelectorAll("input.roof-toggle");
  for (var t2 = 0; t2 < toggles.length; t2++) {
    (function (box) {
      box.addEventListener("change", function () {
        var fig = box.closest("figure");
        var roofs = fig.querySelectorAll('g.roof[data-roof="' + box.getAttribute("data-roof") + '"]');
        for (var r = 0; r < roofs.length; r++) { roofs[r].style.display = box.checked ? "" : "none"; }
      });
    })(toggles[t2]);
  }
  // the timelines' zoom on the time axis (render/output/zoom.py): the wheel zooms about the
  // pointer, a drag pans, the buttons zoom about the middle; boxes, their labels and the ticks move
  function niceTicks(lo, hi) {
    var raw = (hi - lo) / 7, mag = Math.pow(10, Math.floor(Math.log10(raw))), steps = [1, 2, 5, 10], step = mag;
    for (var i = 0; i < steps.length; i++) { if (steps[i] * mag >= raw) { step = steps[i] * mag; break; } }
    var out = [], first = Math.ceil(lo / step) * step;
    for (var t = first; t <= hi + step * 1e-9; t += step) { out.push(Math.round(t / step) * step); }
    return {values: out, digits: Math.max(0, -Math.floor(Math.log10(step) + 1e-9))};
  }
  var zooms = document.querySelectorAll("figure.tlzoom");
  for (var z = 0; z < zooms.length; z++) {
    (function (fig) {
      var svg = fig.querySelector("svg.tl-svg");
      if (!svg) { return; }
      var X0 = +svg.getAttribute("data-x0"), X1 = +svg.getAttribute("data-x1"), span = +svg.getAttribute("data-span");
      var rects = svg.querySelectorAll("rect.b"), labels = svg.querySelectorAll("text.bl");
      var tickGroup = svg.querySelector("g.ticks"), readout = fig.querySelector(".tl-range");
      var base = +tickGroup.querySelector("line").getAttribute("y1"), view = [0, span], drag = null;
      function px(t) { return X0 + (t - view[0]) / (view[1] - view[0]) * (X1 - X0); }
      function draw() {
        for (var i = 0; i < rects.length; i++) {
          var a = px(+rects[i].getAttribute("data-t0")), b = px(+rects[i].getAttribute("data-t1"));
          rects[i].setAttribute("x", a.toFixed(2));
          rects[i].setAttribute("width", Math.max(b - a, 0.8).toFixed(2));
        }
        for (var j = 0; j < labels.length; j++) {
          var l0 = px(+labels[j].getAttribute("data-t0")), l1 = px(+labels[j].getAttribute("data-t1"));
          var full = labels[j].getAttribute("data-label"), lo = Math.max(l0, X0), hi = Math.min(l1, X1);
          var fits = Math.floor((hi - lo - 4) / 6.1);     // the part of the box in view holds the label
          labels[j].textContent = fits < 8 ? "" : full.length <= fits ? full : full.slice(0, fits - 1) + "\u2026";
          labels[j].setAttribute("x", ((lo + hi) / 2).toFixed(2));
          labels[j].setAttribute("display", fits < 8 ? "none" : "inline");
        }
        while (tickGroup.firstChild) { tickGroup.removeChild(tickGroup.firstChild); }
        var ticks = niceTicks(view[0], view[1]);
        for (var k = 0; k < ticks.values.length; k++) {
          var x = px(ticks.values[k]).toFixed(2), line = document.createElementNS(svg.namespaceURI, "line");
          var text = document.createElementNS(svg.namespaceURI, "text");
          line.setAttribute("x1", x); line.setAttribute("x2", x); line.setAttribute("stroke", "#333");
          line.setAttribute("y1", base); line.setAttribute("y2", base + 4);
          text.setAttribute("x", x); text.setAttribute("y", base + 15); text.setAttribute("text-anchor", "middle");
          text.textContent = ticks.values[k].toFixed(ticks.digits);
          tickGroup.appendChild(line); tickGroup.appendChild(text);
        }
        var digits = ticks.digits + 1;
        svg.setAttribute("data-view", view[0] + " " + view[1]);
        readout.textContent = view[0] <= 0 && view[1] >= span ? "all" :
          view[0].toFixed(digits) + "\u2013" + view[1].toFixed(digits) + " of " + span.toPrecision(3);
      }
      function zoom(factor, at) {
        var width = Math.min(span, Math.max(span / 5000, (view[1] - view[0]) * factor));
        var lo = at - (at - view[0]) * width / (view[1] - view[0]);
        lo = Math.min(Math.max(lo, 0), span - width);
        view = [lo, lo + width];
        draw();
      }
      function timeAt(clientX) {
        var r = svg.getBoundingClientRect(), x = (clientX - r.left) / r.width * svg.viewBox.baseVal.width;
        return x < X0 || x > X1 ? null : view[0] + (x - X0) / (X1 - X0) * (view[1] - view[0]);
      }
      svg.addEventListener("wheel", function (e) {
        var t = timeAt(e.clientX);
        if (t === null) { return; }
        e.preventDefault();
        zoom(e.deltaY < 0 ? 0.8 : 1.25, t);
      }, {passive: false});
      svg.addEventListener("mousedown", function (e) {
        if (timeAt(e.clientX) !== null) { drag = {x: e.clientX, view: view.slice()}; e.preventDefault(); }
      });
      window.addEventListener("mousemove", function (e) {
        if (!drag) { return; }
        var r = svg.getBoundingClientRect(), width = drag.view[1] - drag.view[0];
        var dt = -(e.clientX - drag.x) / r.width * svg.viewBox.baseVal.width / (X1 - X0) * width;
        var lo = Math.min(Math.max(drag.view[0] + dt, 0), span - width);
        view = [lo, lo + width];
        draw();
      });
      window.addEventListener("mouseup", function () { drag = null; });
      var buttons = fig.querySelectorAll("button[data-zoom]");
      for (var b = 0; b < buttons.length; b++) {
        (function (button) {
          button.addEventListener("click", function () {
            var how = button.getAttribute("data-zoom"), mid = (view[0] + view[1]) / 2;
            if (how === "reset") { view = [0, span]; draw(); } else { zoom(how === "in" ? 0.5 : 2, mid); }
          });
        })(buttons[b]);
      }
    })(zooms[z]);
  }
  document.documentElement.setAttribute("data-js", "ready");
})();
