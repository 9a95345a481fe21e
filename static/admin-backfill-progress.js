/* The backfill job list in the admin: live progress bars for scheduled and running jobs. */
(function () {
  "use strict";
  // The URL comes from the tag that loads this file: no inline script under the CSP.
  var url = document.currentScript.getAttribute("data-progress-url");
  var columns = ["inserted", "fixed", "conflicts"];

  function activeBars() {
    return Array.prototype.filter.call(
      document.querySelectorAll("progress[data-backfill-job]"),
      function (bar) {
        var status = bar.getAttribute("data-backfill-status");
        return status === "scheduled" || status === "running";
      }
    );
  }

  function apply(job) {
    var bar = document.querySelector('progress[data-backfill-job="' + job.id + '"]');
    if (!bar) { return false; }
    var finished = !job.active;
    bar.value = job.percent;
    bar.textContent = job.percent + "%";
    bar.setAttribute("data-backfill-status", job.status);
    var label = document.querySelector('[data-backfill-label="' + job.id + '"]');
    if (label) { label.textContent = job.label; }
    var row = bar.closest("tr");
    var statusCell = row && row.querySelector(".field-status");
    if (statusCell) { statusCell.textContent = job.status_display; }
    columns.forEach(function (name) {
      var cell = row && row.querySelector(".field-" + name);
      if (cell && job[name] !== null && job[name] !== undefined) { cell.textContent = job[name]; }
    });
    return finished;
  }

  function poll() {
    var bars = activeBars();
    if (!bars.length) { return; }
    if (document.visibilityState === "visible") {
      var query = bars.map(function (bar) {
        return "id=" + encodeURIComponent(bar.getAttribute("data-backfill-job"));
      }).join("&");
      fetch(url + "?" + query, {credentials: "same-origin", headers: {"Accept": "application/json"}})
        .then(function (response) { return response.ok ? response.json() : {jobs: []}; })
        .then(function (data) {
          var ended = false;
          data.jobs.forEach(function (job) { ended = apply(job) || ended; });
          // A job that ended: reload once for its final columns (finished at, error).
          if (ended && !document.querySelector("#changelist-form input.action-select:checked")) {
            window.location.reload();
          }
        })
        .catch(function () {});
    }
    window.setTimeout(poll, 2000);
  }

  window.setTimeout(poll, 2000);
})();
