/* tritongate dashboard: the index. Reads #tg-data, draws the groups, the change points (newest
   first) and every row, and filters both tables by suite, runner class, GPU, dtype and op. */
"use strict";
(function () {
  var t0 = performance.now();
  var D = TG.data("tg-data");
  var el = TG.el;
  var groups = D.groups;

  function groupText(g) {
    var x = groups[g];
    return x.runner_class + " / " + x.suite + " / " + x.gpu + (x.repo ? " / " + x.repo : "");
  }

  /* -- groups and notes ------------------------------------------------------------------ */
  var box = document.getElementById("groups");
  box.appendChild(el("h2", null, "Groups"));
  var list = el("ul", {"class": "groups"});
  groups.forEach(function (x, g) {
    var item = el("li", {"data-group": g});
    item.appendChild(el("strong", null, groupText(g)));
    item.appendChild(document.createTextNode(": " + x.entries + " entries (" + TG.date(x.first) + " to " +
      TG.date(x.last) + "), " + x.missing + " missing nightl" + (x.missing === 1 ? "y" : "ies") + ", " +
      x.damaged + " damaged entr" + (x.damaged === 1 ? "y" : "ies")));
    if (x.notes.length) {
      var more = el("details", {"class": "notes"});
      more.appendChild(el("summary", null, x.notes.length + " note" + (x.notes.length === 1 ? "" : "s")));
      var ul = el("ul");
      x.notes.forEach(function (n) { ul.appendChild(el("li", null, n)); });
      more.appendChild(ul);
      item.appendChild(more);
    }
    list.appendChild(item);
  });
  box.appendChild(list);
  if (D.notes.length) {
    var notes = document.getElementById("notes");
    notes.appendChild(el("h2", null, "Store notes"));
    var ul = el("ul");
    D.notes.forEach(function (n) { ul.appendChild(el("li", null, n)); });
    notes.appendChild(ul);
  }

  /* -- filters --------------------------------------------------------------------------- */
  var state = {runner: "", suite: "", gpu: "", dtype: "", op: "", changed: false};
  var bar = document.getElementById("filters");

  function uniq(values) {
    var seen = {};
    values.forEach(function (v) { seen[v] = true; });
    return Object.keys(seen).sort();
  }
  function select(name, label, values) {
    var wrap = el("label", null, label + " ");
    var s = el("select", {id: "filter-" + name, name: name});
    s.appendChild(el("option", {value: ""}, "all"));
    values.forEach(function (v) { s.appendChild(el("option", {value: v}, v)); });
    s.addEventListener("change", function () { state[name] = s.value; apply(); });
    wrap.appendChild(s);
    bar.appendChild(wrap);
  }
  select("suite", "Suite", uniq(groups.map(function (x) { return x.suite; })));
  select("runner", "Runner class", uniq(groups.map(function (x) { return x.runner_class; })));
  select("gpu", "GPU", uniq(groups.map(function (x) { return x.gpu; })));
  select("dtype", "Dtype", uniq(D.rows.map(function (r) { return r.dtype; })));
  var opWrap = el("label", null, "Op ");
  var opBox = el("input", {id: "filter-op", type: "search", placeholder: "part of a name", size: 18});
  opBox.addEventListener("input", function () { state.op = opBox.value.toLowerCase(); apply(); });
  opWrap.appendChild(opBox);
  bar.appendChild(opWrap);
  var chWrap = el("label", null, " Only rows that changed in the window ");
  var chBox = el("input", {id: "filter-changed", type: "checkbox"});
  chBox.addEventListener("change", function () { state.changed = chBox.checked; apply(); });
  chWrap.insertBefore(chBox, chWrap.firstChild);
  bar.appendChild(chWrap);

  function keep(r) {
    var x = groups[r.g];
    return (!state.suite || x.suite === state.suite) && (!state.runner || x.runner_class === state.runner) &&
      (!state.gpu || x.gpu === state.gpu) && (!state.dtype || r.dtype === state.dtype) &&
      (!state.op || r.op.toLowerCase().indexOf(state.op) >= 0);
  }

  /* -- tables ---------------------------------------------------------------------------- */
  function head(table, names) {
    var tr = el("tr");
    names.forEach(function (n) { tr.appendChild(el("th", {scope: "col"}, n)); });
    table.tHead.appendChild(tr);
    return tr;
  }
  function td(tr, text, cls, title) {
    var cell = el("td", {"class": cls || null, title: title || null}, text);
    tr.appendChild(cell);
    return cell;
  }
  function sign(x) { return x > 0 ? "slower" : (x < 0 ? "faster" : ""); }
  /* a drift, or (none confirmed: not a measured 0) why there is none, in short with the whole reason as its title */
  function drift(tr, x, why) {
    if (x === null || x === undefined) return td(tr, String(why).split(":")[0], "none", why);
    return td(tr, TG.pct(x), "num " + sign(x));
  }

  var cpTable = document.getElementById("cps");
  head(cpTable, ["night", "op", "case", "dtype", "change", "before → after", "between commits", "p", "", "group"]);
  var cpRows = D.cps.map(function (c) {
    var tr = el("tr", {"data-night": TG.date(c.at)});
    td(tr, TG.date(c.at), null, "first night after: " + TG.dateTime(c.at) + "; last before: " + TG.dateTime(c.bt));
    var opCell = td(tr, "");
    opCell.appendChild(el("a", {href: c.href}, c.op));
    td(tr, c.case);
    td(tr, c.dtype);
    var change = td(tr, TG.pct(c.rel), "num " + sign(c.rel));
    if (c.cfg) change.appendChild(el("span", {"class": "cfg", title: "autotune chose other configs on the two nights: " +
                                               "the shift may be the choice, not the compiler's code"}, " (other configs)"));
    td(tr, TG.us(c.mb) + " → " + TG.us(c.ma), "num");
    var between = td(tr, "", "commits");
    var text = TG.commit(c.cb) + "…" + TG.commit(c.ca);
    between.appendChild(c.url ? el("a", {href: c.url, rel: "noopener noreferrer", title: "compare on GitHub"}, text)
                              : el("span", {title: (c.cb || "?") + " … " + (c.ca || "?")}, text));
    td(tr, TG.pValue(c.p), "num");
    td(tr, c.new ? "new" : "", c.new ? "new" : null);
    td(tr, groupText(c.g), "group");
    cpTable.tBodies[0].appendChild(tr);
    return {row: c, tr: tr};
  });

  var rowTable = document.getElementById("rows");
  var columns = [["op", "op"], ["case", "case"], ["dtype", "dtype"], ["group", null], ["latest", "last"],
                 ["drift (window)", "dw"], ["drift (all)", "dt"], ["changes (window / all)", "nw"]];
  var headRow = head(rowTable, columns.map(function (c) { return c[0]; }));
  var rowItems = D.rows.map(function (r) {
    var tr = el("tr");
    var opCell = td(tr, "");
    opCell.appendChild(el("a", {href: r.href}, r.op));
    td(tr, r.case);
    td(tr, r.dtype);
    td(tr, groupText(r.g), "group");
    if (r.gap) td(tr, "gap: " + r.gap, "gap", "last value " + TG.us(r.last) + " on " + TG.date(r.lt));
    else td(tr, TG.us(r.last) + (r.gone ? " (" + TG.date(r.lt) + ", not in the latest entry)" : ""),
            "num" + (r.gone ? " gone" : ""), TG.dateTime(r.lt));
    drift(tr, r.dw, r.dwn);
    drift(tr, r.dt, r.dn);
    td(tr, r.nw + " / " + r.nc, "num");
    rowTable.tBodies[0].appendChild(tr);
    return {row: r, tr: tr};
  });

  /* click a column head to sort by it (again: the other way) */
  var order = {key: null, dir: 1};
  Array.prototype.forEach.call(headRow.children, function (th, i) {
    var key = columns[i][1];
    if (!key) return;
    th.classList.add("sortable");
    th.addEventListener("click", function () {
      order.dir = order.key === key ? -order.dir : (["op", "case", "dtype"].indexOf(key) >= 0 ? 1 : -1);
      order.key = key;
      var abs = key === "dw" || key === "dt";
      rowItems.sort(function (a, b) {
        var x = a.row[key], y = b.row[key];
        if (x === null) return y === null ? 0 : 1;  // no value (no drift confirmed, no latest) sorts last
        if (y === null) return -1;
        if (abs) { x = Math.abs(x); y = Math.abs(y); }
        return (x < y ? -1 : (x > y ? 1 : 0)) * order.dir;
      });
      var body = rowTable.tBodies[0];
      rowItems.forEach(function (it) { body.appendChild(it.tr); });
    });
  });

  function apply() {
    var shown = 0;
    rowItems.forEach(function (it) {
      var ok = keep(it.row) && (!state.changed || it.row.nw > 0);
      it.tr.hidden = !ok;
      shown += ok ? 1 : 0;
    });
    document.getElementById("row-count").textContent = "(" + shown + " of " + rowItems.length + ")";
    var cps = 0;
    cpRows.forEach(function (it) {
      var ok = keep(it.row);
      it.tr.hidden = !ok;
      cps += ok ? 1 : 0;
    });
    document.getElementById("cp-count").textContent = "(" + cps + " of " + cpRows.length + ")";
  }
  apply();
  document.body.setAttribute("data-rows", String(rowItems.length));
  document.body.setAttribute("data-render-ms", String(Math.round(performance.now() - t0)));
  document.body.setAttribute("data-ready", "1");
})();
