(function () {
  "use strict";
  // Sorting, filtering and column toggles of the report's tables. Data is read from
  // attributes and text, and only text is written (textContent): no name becomes markup.
  function columnRow(table) {
    var rows = table.tHead.rows;
    return rows[rows.length - 1];
  }

  function sortable(table) {
    var headers = columnRow(table).cells;
    Array.prototype.forEach.call(headers, function (header, column) {
      header.setAttribute("tabindex", "0");
      function sort() {
        var ascending = header.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("aria-sort"); });
        header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var numeric = header.getAttribute("data-type") === "number";
        rows.sort(function (a, b) {
          var x = a.cells[column].getAttribute("data-value");
          var y = b.cells[column].getAttribute("data-value");
          if (numeric) {
            var p = x === "" ? NaN : Number(x), q = y === "" ? NaN : Number(y);
            if (isNaN(p) && isNaN(q)) { return 0; }
            if (isNaN(p)) { return 1; }
            if (isNaN(q)) { return -1; }
            return ascending ? p - q : q - p;
          }
          return ascending ? x.localeCompare(y) : y.localeCompare(x);
        });
        rows.forEach(function (row) { body.appendChild(row); });
      }
      header.addEventListener("click", sort);
      header.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sort(); }
      });
    });
  }

  // A group's header spans the columns of the group that are shown.
  function spanGroups(table) {
    var headers = columnRow(table).cells;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (group) {
      if (!group.classList.contains("group")) { return; }
      var slug = Array.prototype.filter.call(group.classList, function (c) {
        return c.indexOf("g-") === 0;
      })[0];
      var shown = Array.prototype.filter.call(headers, function (h) {
        return h.classList.contains(slug) && getComputedStyle(h).display !== "none";
      }).length;
      group.colSpan = Math.max(shown, 1);
    });
  }

  // The intervals live in the cells' titles; ticked, each is written into its cell once.
  function writeIntervals(table) {
    if (table.getAttribute("data-intervals") === "written") { return; }
    Array.prototype.forEach.call(table.tBodies[0].querySelectorAll("td[title]"), function (cell) {
      var title = cell.getAttribute("title");
      var start = title.indexOf("[");
      if (cell.classList.contains("key") || start === -1) { return; }
      var span = document.createElement("span");
      span.className = "ci";
      span.textContent = " " + title.slice(start);
      cell.appendChild(span);
    });
    table.setAttribute("data-intervals", "written");
  }

  function toolbar(bar) {
    var table = document.getElementById(bar.getAttribute("data-table"));
    if (!table) { return; }
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var keys = rows.map(function (row) {
      return Array.prototype.filter.call(row.cells, function (cell) {
        return cell.classList.contains("key");
      }).map(function (cell) { return cell.getAttribute("data-value").toLowerCase(); }).join(" ");
    });
    var status = bar.querySelector(".shown");
    var filter = bar.querySelector("input.filter");
    function apply() {
      var terms = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
      var shown = 0;
      rows.forEach(function (row, index) {
        var match = terms.every(function (term) { return keys[index].indexOf(term) !== -1; });
        row.hidden = !match;
        if (match) { shown += 1; }
      });
      status.textContent = terms.length ? shown + " of " + rows.length + " rows" : "";
    }
    filter.addEventListener("input", apply);
    Array.prototype.forEach.call(bar.querySelectorAll("input[data-toggle]"), function (box) {
      box.addEventListener("change", function () {
        if (box.getAttribute("data-toggle") === "ci" && box.checked) { writeIntervals(table); }
        table.classList.toggle("hide-" + box.getAttribute("data-toggle"), !box.checked);
        spanGroups(table);
      });
    });
    apply();
  }

  // A click on a heatmap cell picks its group in the diagram of one group, and the
  // heatmap outlines the cell of the group the diagram draws (both hold the parameters
  // pick_0, pick_1 …): the charts say their part in their spec's usermeta
  // ({"pick": "cells"} and {"pick": [keys]}).
  var pickFrom = null, pickInto = null;
  function link() {
    if (!pickFrom || !pickInto || pickFrom.getAttribute("data-linked")) { return; }
    pickFrom.setAttribute("data-linked", "true");
    var keys = pickInto.vegaSpec.usermeta.pick, diagram = pickInto.vegaView;
    var heatmap = pickFrom.vegaView;
    function outline() {
      keys.forEach(function (key, index) {
        heatmap.signal("pick_" + index, diagram.signal("pick_" + index));
      });
      heatmap.runAsync();
    }
    keys.forEach(function (key, index) { diagram.addSignalListener("pick_" + index, outline); });
    outline();
    heatmap.addEventListener("click", function (event, item) {
      var row = item && item.datum;
      // a cell without predictions (or the row of the models left out) has no diagram
      if (!row || row._draw === "none" || row._draw === "gap") { return; }
      if (!keys.every(function (key) { return key in row; })) { return; }
      keys.forEach(function (key, index) { diagram.signal("pick_" + index, row[key]); });
      diagram.runAsync();
      var box = pickInto.getBoundingClientRect();
      if (box.top < 0 || box.top > window.innerHeight * 0.6) {
        pickInto.scrollIntoView({ block: "start" });
      }
    });
  }
  document.addEventListener("vegaready", function (event) {
    var meta = event.target.vegaSpec.usermeta;
    if (!meta || !meta.pick) { return; }
    if (meta.pick === "cells") { pickFrom = event.target; } else { pickInto = event.target; }
    link();
  });

  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), sortable);
  Array.prototype.forEach.call(document.querySelectorAll(".toolbar[data-table]"), toolbar);
})();
