(function () {
  "use strict";
  var table = document.getElementById("comparison");
  if (!table) { return; }
  var headers = table.tHead.rows[0].cells;
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
})();
