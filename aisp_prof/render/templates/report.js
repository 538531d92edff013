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
  document.documentElement.setAttribute("data-js", "ready");
})();
