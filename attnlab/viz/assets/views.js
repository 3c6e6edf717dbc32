/* attnlab offline attention views: a head view and a model view.
 *
 * Hand-written, no libraries, nothing loaded from the network. A view is a
 * root element plus a data object:
 *   data.tokens  list of n token strings
 *   data.attn    [layers][heads][n][n] weights (row = query, column = key)
 *   data.colors  one CSS colour per head
 *   data.layer   layer shown first (0-based); data.heads: heads shown first
 *   data.text    the texts shown, in the reader's language (keys: offline_views.VIEW_TEXTS;
 *                "{layer}" and "{head}" are filled in, numbered from 1)
 *
 * Head view: tokens in two columns (queries left, keys right) joined by lines
 * whose opacity is the attention weight, one colour per head. Pick the layer,
 * click a head's colour to toggle it (double-click: only that head), hover a
 * token to keep only its lines.
 *
 * Model view: a thumbnail of the line view for every layer x head; click one
 * to open it as a head view below the grid.
 */
(function () {
  "use strict";
  if (window.attnlabViews) { return; }

  var ROW = 22;        // pixels per token row in the head view
  var WIDTH = 180;     // width of the line area
  var DEFAULT_TEXT = {  // English, for data without texts (offline_views.VIEW_TEXTS sends them translated)
    layer: "Layer", heads: "Heads",
    head_toggle: "head {head} (click: toggle, double-click: only this head)",
    head_hint: "Left: query tokens, right: the tokens they attend to. Line opacity = attention weight. " +
      "Hover a token to isolate its lines.",
    model_hint: "Every layer (rows) and head (columns) as a small line view. Click one to open it below.",
    thumb: "layer {layer}, head {head}",
    detail: "Layer {layer}, head {head}"
  };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  // A text of the view in the reader's language, with {name} fields filled from values.
  function say(data, key, values) {
    var text = (data.text && data.text[key]) || DEFAULT_TEXT[key];
    return text.replace(/\{(\w+)\}/g, function (all, name) {
      return values && values[name] !== undefined ? String(values[name]) : all;
    });
  }

  function setupCanvas(canvas, w, h) {
    var ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(w * ratio);
    canvas.height = Math.round(h * ratio);
    canvas.style.width = w + "px";
    canvas.style.height = h + "px";
    var ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    return ctx;
  }

  // Draw the lines of some heads of one layer into a 2-D context.
  // keep(i, j) decides which query i -> key j lines are drawn.
  function drawLines(ctx, data, layer, heads, w, rowH, keep, lineWidth) {
    var n = data.tokens.length;
    ctx.clearRect(0, 0, w, n * rowH);
    ctx.lineWidth = lineWidth;
    for (var k = 0; k < heads.length; k++) {
      var h = heads[k];
      var a = data.attn[layer][h];
      ctx.strokeStyle = data.colors[h % data.colors.length];
      for (var i = 0; i < n; i++) {
        for (var j = 0; j < n; j++) {
          var wgt = a[i][j];
          if (wgt < 0.01 || !keep(i, j)) { continue; }
          ctx.globalAlpha = Math.min(1, wgt);
          ctx.beginPath();
          ctx.moveTo(0, i * rowH + rowH / 2);
          ctx.lineTo(w, j * rowH + rowH / 2);
          ctx.stroke();
        }
      }
    }
    ctx.globalAlpha = 1;
  }

  function headView(root, data) {
    var L = data.attn.length, H = data.attn[0].length, n = data.tokens.length;
    var state = { layer: data.layer, heads: {}, hover: null };
    (data.heads || []).forEach(function (h) { state.heads[h] = true; });

    var controls = el("div", "al-controls");
    controls.appendChild(el("span", "", say(data, "layer")));
    var select = el("select");
    for (var l = 0; l < L; l++) {
      var opt = el("option", "", String(l + 1));
      opt.value = String(l);
      if (l === state.layer) { opt.selected = true; }
      select.appendChild(opt);
    }
    controls.appendChild(select);
    controls.appendChild(el("span", "", say(data, "heads")));
    var toggles = [];
    for (var h = 0; h < H; h++) {
      var t = el("span", "al-head", String(h + 1));
      t.style.background = data.colors[h % data.colors.length];
      t.title = say(data, "head_toggle", { head: h + 1 });
      t.dataset.head = String(h);
      controls.appendChild(t);
      toggles.push(t);
    }
    root.appendChild(controls);
    root.appendChild(el("div", "al-hint", say(data, "head_hint")));

    var body = el("div", "al-body");
    var left = el("div", "al-col al-left");
    var right = el("div", "al-col al-right");
    var canvas = el("canvas");
    var leftToks = [], rightToks = [];
    data.tokens.forEach(function (tok, i) {
      var a = el("div", "al-tok", tok);
      var b = el("div", "al-tok", tok);
      a.style.height = b.style.height = ROW + "px";
      a.style.lineHeight = b.style.lineHeight = ROW + "px";
      a.dataset.index = b.dataset.index = String(i);
      left.appendChild(a); right.appendChild(b);
      leftToks.push(a); rightToks.push(b);
    });
    body.appendChild(left); body.appendChild(canvas); body.appendChild(right);
    root.appendChild(body);
    var ctx = setupCanvas(canvas, WIDTH, n * ROW);

    function selectedHeads() {
      var out = [];
      for (var h = 0; h < H; h++) { if (state.heads[h]) { out.push(h); } }
      return out;
    }

    function shade(tokens, weights) {
      tokens.forEach(function (t, i) {
        t.style.background = weights ? "rgba(70, 110, 200, " + Math.min(1, weights[i]).toFixed(3) + ")" : "";
      });
    }

    function render() {
      var heads = selectedHeads();
      toggles.forEach(function (t, h) { t.classList.toggle("al-off", !state.heads[h]); });
      var hv = state.hover;
      var keep = function () { return true; };
      if (hv && hv.side === "left") { keep = function (i) { return i === hv.index; }; }
      if (hv && hv.side === "right") { keep = function (i, j) { return j === hv.index; }; }
      drawLines(ctx, data, state.layer, heads, WIDTH, ROW, keep, 2);
      leftToks.forEach(function (t, i) { t.classList.toggle("al-active", !!hv && hv.side === "left" && hv.index === i); });
      rightToks.forEach(function (t, i) { t.classList.toggle("al-active", !!hv && hv.side === "right" && hv.index === i); });
      shade(leftToks, null); shade(rightToks, null);
      if (hv && heads.length) {
        var w = [];
        for (var m = 0; m < n; m++) {
          var s = 0;
          heads.forEach(function (h) {
            var a = data.attn[state.layer][h];
            s += hv.side === "left" ? a[hv.index][m] : a[m][hv.index];
          });
          w.push(s / heads.length);
        }
        shade(hv.side === "left" ? rightToks : leftToks, w);
      }
    }

    select.addEventListener("change", function () { state.layer = parseInt(select.value, 10); render(); });
    toggles.forEach(function (t) {
      var h = parseInt(t.dataset.head, 10);
      t.addEventListener("click", function () { state.heads[h] = !state.heads[h]; render(); });
      t.addEventListener("dblclick", function () {
        for (var k = 0; k < H; k++) { state.heads[k] = (k === h); }
        render();
      });
    });
    function hoverOn(side) {
      return function (ev) { state.hover = { side: side, index: parseInt(ev.currentTarget.dataset.index, 10) }; render(); };
    }
    leftToks.forEach(function (t) { t.addEventListener("mouseenter", hoverOn("left")); });
    rightToks.forEach(function (t) { t.addEventListener("mouseenter", hoverOn("right")); });
    body.addEventListener("mouseleave", function () { state.hover = null; render(); });
    render();
  }

  function modelView(root, data) {
    var L = data.attn.length, H = data.attn[0].length, n = data.tokens.length;
    var rowH = Math.max(2, Math.min(6, Math.floor(90 / n)));
    var thumbW = 48;
    root.appendChild(el("div", "al-hint", say(data, "model_hint")));
    var table = el("table", "al-grid");
    var head = el("tr");
    head.appendChild(el("th", "", ""));
    for (var h = 0; h < H; h++) { head.appendChild(el("th", "", "H" + (h + 1))); }
    table.appendChild(head);
    var detail = el("div", "al-detail");
    var picked = null;
    for (var l = 0; l < L; l++) {
      var tr = el("tr");
      tr.appendChild(el("th", "", "L" + (l + 1)));
      for (var k = 0; k < H; k++) {
        var td = el("td");
        var c = el("canvas", "al-thumb");
        c.title = say(data, "thumb", { layer: l + 1, head: k + 1 });
        var ctx = setupCanvas(c, thumbW, n * rowH);
        drawLines(ctx, data, l, [k], thumbW, rowH, function () { return true; }, 1.5);
        (function (layer, hh, canvas) {
          canvas.addEventListener("click", function () {
            if (picked) { picked.classList.remove("al-picked"); }
            canvas.classList.add("al-picked");
            picked = canvas;
            detail.innerHTML = "";
            var sub = el("div");
            detail.appendChild(el("div", "al-title", say(data, "detail", { layer: layer + 1, head: hh + 1 })));
            detail.appendChild(sub);
            headView(sub, { tokens: data.tokens, attn: data.attn, colors: data.colors, text: data.text, layer: layer,
                            heads: [hh] });
          });
        })(l, k, c);
        td.appendChild(c);
        tr.appendChild(td);
      }
      table.appendChild(tr);
    }
    root.appendChild(table);
    root.appendChild(detail);
  }

  window.attnlabViews = { headView: headView, modelView: modelView };
})();
