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
  document.documentElement.setAttribute("data-js", "ready");
})();
