/* tritongate dashboard: one op's page. Reads #tg-data and draws, per case and dtype, a uPlot chart
   of the nightly medians (gaps break the line and are marked ×, missing nightlies shaded, damaged
   entries marked ▲, change points dashed), a panel with the hovered or pinned point, and the
   change points and gaps as lists (each item carries data-night="YYYY-MM-DD"). */
"use strict";
(function () {
  var t0 = performance.now();
  var D = TG.data("tg-data");
  var el = TG.el;
  var E = D.entries;
  var LOG_SPAN = 20;  // a row whose medians span more than this ratio gets a log y axis (as history's PNGs)
  var charts = [];

  function entryHref(pos) { return D.store + "/" + D.prefix + "/" + E.e[pos] + "/"; }
  function folderHref(name) { return D.store + "/" + D.prefix + "/" + name + "/"; }

  if (D.damaged.length) {
    var box = document.getElementById("damaged");
    box.appendChild(el("h2", null, "Damaged entries (gaps in every chart, marked ▲)"));
    var ul = el("ul", {"class": "damaged"});
    D.damaged.forEach(function (d) {
      var item = el("li", {"data-night": TG.date(d[0])}, TG.dateTime(d[0]) + ", entry ");
      item.appendChild(el("a", {href: folderHref(d[1])}, decodeURIComponent(d[1])));
      item.appendChild(document.createTextNode(": " + d[2]));
      ul.appendChild(item);
    });
    box.appendChild(ul);
  }

  /* The chart's points: the row's, and a null at each damaged entry's night inside the row's
     span (the line breaks there); at[k] is the row's point k shows, or -1 - d for damaged entry d. */
  function chartData(row, xs) {
    var cx = [], cy = [], at = [], d = 0, dam = D.damaged, last = xs[xs.length - 1];
    for (var j = 0; j <= xs.length; j++) {
      while (d < dam.length && (j === xs.length || dam[d][0] < xs[j])) {
        if (dam[d][0] > xs[0] && dam[d][0] < last) { cx.push(dam[d][0]); cy.push(null); at.push(-1 - d); }
        d++;
      }
      if (j < xs.length) { cx.push(xs[j]); cy.push(row.v[j]); at.push(j); }
    }
    return {x: cx, y: cy, at: at};
  }

  function describe(row, xs, j, panel, pinned) {
    while (panel.firstChild) panel.removeChild(panel.firstChild);
    if (j < 0) {
      var dm = D.damaged[-1 - j];
      panel.appendChild(el("strong", null, TG.dateTime(dm[0])));
      panel.appendChild(el("span", {"class": "gap"}, " · damaged entry, skipped: " + dm[2] + " · "));
      panel.appendChild(el("a", {href: folderHref(dm[1]), "class": "entry"}, "store entry"));
      return;
    }
    var pos = row.first + j;
    var v = row.v[j];
    panel.appendChild(el("strong", null, TG.dateTime(xs[j])));
    panel.appendChild(document.createTextNode(" · commit "));
    panel.appendChild(el("code", {title: E.c[pos] || "not recorded"}, TG.commit(E.c[pos])));
    panel.appendChild(document.createTextNode(" · "));
    if (v === null) {
      var reason = row.gaps.filter(function (g) { return g[0] === j; })[0];
      panel.appendChild(el("span", {"class": "gap"}, "gap: " + (reason ? D.reasons[reason[1]] : "no value")));
    } else {
      var n = typeof row.n === "number" ? row.n : row.n[j];
      var q = row.q[j];
      panel.appendChild(el("span", {"class": "value"}, "median " + TG.us(v)));
      panel.appendChild(document.createTextNode((q === null ? "" : " · IQR " + TG.us(q)) + " · n=" + n));
    }
    panel.appendChild(document.createTextNode(" · "));
    panel.appendChild(el("a", {href: entryHref(pos), "class": "entry"}, "store entry"));
    if (pinned) panel.appendChild(el("span", {"class": "pinned"}, " (pinned: click the chart to unpin)"));
  }

  function marks(row, xs) {
    return function (u) {
      var ctx = u.ctx, b = u.bbox, dpr = devicePixelRatio || 1;
      function x(t) { return u.valToPos(t, "x", true); }
      ctx.save();
      ctx.beginPath();
      ctx.rect(b.left, b.top, b.width, b.height);
      ctx.clip();
      ctx.fillStyle = "rgba(120,120,120,0.13)";
      D.missing.forEach(function (m) { ctx.fillRect(x(m[0]), b.top, x(m[1]) - x(m[0]), b.height); });
      ctx.font = (11 * dpr) + "px sans-serif";
      ctx.textAlign = "center";
      ctx.fillStyle = "#c0392b";
      D.damaged.forEach(function (d) { ctx.fillText("▲", x(d[0]), b.top + 12 * dpr); });
      ctx.fillStyle = "#d35400";
      ctx.font = "bold " + (15 * dpr) + "px sans-serif";
      row.gaps.forEach(function (g) { ctx.fillText("×", x(xs[g[0]]), b.top + b.height - 5 * dpr); });
      ctx.font = (11 * dpr) + "px sans-serif";
      ctx.setLineDash([5 * dpr, 4 * dpr]);
      ctx.lineWidth = dpr;
      row.cps.forEach(function (c) {
        var at = x((c.bt + c.at) / 2);
        ctx.strokeStyle = ctx.fillStyle = c.rel > 0 ? "#c0392b" : "#1e8449";
        ctx.beginPath();
        ctx.moveTo(at, b.top);
        ctx.lineTo(at, b.top + b.height);
        ctx.stroke();
        var label = TG.pct(c.rel), w = ctx.measureText(label).width;
        ctx.fillStyle = "rgba(255,255,255,0.85)";
        ctx.fillRect(at + 2 * dpr, b.top + 16 * dpr, w + 4 * dpr, 14 * dpr);
        ctx.fillStyle = ctx.strokeStyle;
        ctx.textAlign = "left";
        ctx.fillText(label, at + 4 * dpr, b.top + 27 * dpr);
      });
      ctx.restore();
    };
  }

  function chart(row, i, main) {
    var n = row.v.length;
    var xs = E.t.slice(row.first, row.first + n);
    var section = el("section", {"class": "row", id: row.anchor});
    section.appendChild(el("h2", null, row.case + " · " + row.dtype));
    var valued = row.v.filter(function (v) { return v !== null; });
    var last = valued.length ? valued[valued.length - 1] : null;
    var drifts = row.drift === null ? "drift: " + row.dn
      : (row.dw === null ? row.dwn.split(":")[0] : "drift over the window " + TG.pct(row.dw)) +
        " · over the whole history " + TG.pct(row.drift);
    section.appendChild(el("p", {"class": "meta"}, "latest " + TG.us(last) + " · " + drifts + " · noise " +
      (100 * row.noise).toFixed(1) + " % · " + valued.length + " of " + n + " nights with a value"));
    var holder = el("div", {"class": "chart"});
    section.appendChild(holder);
    var panel = el("p", {"class": "point"}, "Hover a point to see its night; click to pin it.");
    section.appendChild(panel);
    main.appendChild(section);

    var lo = Math.min.apply(null, valued.length ? valued : [1]), hi = Math.max.apply(null, valued.length ? valued : [1]);
    var pinned = null, down = null, cd = chartData(row, xs);
    var opts = {
      width: Math.max(320, holder.clientWidth || 900), height: 260,
      scales: {x: {time: true}, y: {distr: hi / lo > LOG_SPAN ? 3 : 1}},
      axes: [{}, {size: 70, label: "median (µs)", values: function (u, vals) {
        return vals.map(function (v) { return v === null ? "" : +v.toPrecision(4); });
      }}],
      series: [{}, {label: "median", stroke: "#2c6fbb", width: 1.5, spanGaps: false,
                    points: {show: true, size: 5, fill: "#2c6fbb"}}],
      legend: {show: false},
      cursor: {sync: {key: "tg-op"}, drag: {x: true, y: false}},
      hooks: {
        draw: [marks(row, xs)],
        setCursor: [function (u) {
          var j = u.cursor.idx;
          if (pinned === null && j !== null && j !== undefined) describe(row, xs, cd.at[j], panel, false);
        }]
      }
    };
    var u = new uPlot(opts, [cd.x, cd.y], holder);
    u.over.addEventListener("mousedown", function (e) { down = [e.clientX, e.clientY]; });
    u.over.addEventListener("click", function (e) {
      if (down && Math.abs(e.clientX - down[0]) + Math.abs(e.clientY - down[1]) > 3) return;  // a zoom drag
      var j = u.cursor.idx;
      pinned = pinned === null && j !== null && j !== undefined ? j : null;
      if (pinned !== null) describe(row, xs, cd.at[pinned], panel, true);
    });
    charts.push({u: u, xs: xs});
    var wanted = /^#([A-Za-z0-9]+):(\d{4}-\d{2}-\d{2})$/.exec(location.hash);  // #row1:2026-11-15 pins that night
    if (wanted && wanted[1] === row.anchor) {
      for (var k = 0; k < cd.x.length; k++) {
        if (TG.date(cd.x[k]) === wanted[2]) {
          pinned = k;
          describe(row, xs, cd.at[k], panel, true);
          section.scrollIntoView();
          break;
        }
      }
    }

    var cps = el("ol", {"class": "cps"});
    row.cps.forEach(function (c) {
      var item = el("li", {"data-night": TG.date(c.at), "data-index": c.i - row.first});
      item.appendChild(el("strong", null, TG.pct(c.rel)));
      item.appendChild(document.createTextNode(" (" + TG.us(c.mb) + " → " + TG.us(c.ma) + ", p " +
        TG.pValue(c.p) + (c.new ? ", new" : "") + (c.cfg ? ", autotune chose other configs" : "") + ") between " + TG.date(c.bt) + " ("));
      item.appendChild(el("a", {href: entryHref(c.ib)}, TG.commit(c.cb)));
      item.appendChild(document.createTextNode(") and " + TG.date(c.at) + " ("));
      item.appendChild(el("a", {href: entryHref(c.i)}, TG.commit(c.ca)));
      item.appendChild(document.createTextNode(")"));
      if (c.url) {
        item.appendChild(document.createTextNode(" · "));
        item.appendChild(el("a", {href: c.url, rel: "noopener noreferrer"}, "compare the commits"));
      }
      cps.appendChild(item);
    });
    section.appendChild(el("h3", null, row.cps.length ? "Change points" : "No change points"));
    if (row.cps.length) section.appendChild(cps);
    if (row.gaps.length) {
      var more = el("details", {"class": "gaps"});
      more.appendChild(el("summary", null, row.gaps.length + " gap" + (row.gaps.length === 1 ? "" : "s")));
      var list = el("ul");
      row.gaps.forEach(function (g) {
        list.appendChild(el("li", {"data-night": TG.date(xs[g[0]])}, TG.dateTime(xs[g[0]]) + ": " + D.reasons[g[1]]));
      });
      more.appendChild(list);
      section.appendChild(more);
    }
  }

  function show(all) {
    charts.forEach(function (c) {
      var first = c.xs[0], last = c.xs[c.xs.length - 1];
      var min = all ? first : Math.max(first, D.window_start);
      if (last > min) c.u.setScale("x", {min: min, max: last});
    });
  }

  var main = document.getElementById("charts");
  D.rows.forEach(function (row, i) { chart(row, i, main); });
  show(false);
  document.getElementById("show-window").addEventListener("click", function () { show(false); });
  document.getElementById("show-all").addEventListener("click", function () { show(true); });
  var resizing = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () {
      charts.forEach(function (c) {
        c.u.setSize({width: Math.max(320, c.u.root.parentNode.clientWidth), height: 260});
      });
    }, 150);
  });
  document.body.setAttribute("data-charts", String(charts.length));
  document.body.setAttribute("data-render-ms", String(Math.round(performance.now() - t0)));
  document.body.setAttribute("data-ready", "1");
})();
