// A small YAML writer for Prometheus rule files. std.manifestYamlDoc sorts keys (expr before alert) and quotes
// every string; this one keeps the order Prometheus' own examples use, writes PromQL as literal blocks and long
// annotations as folded blocks, so the generated files read like hand-written ones.
local count(s, ch) = std.length(std.split(s, ch)) - 1;  // std.split is native; std.findSubstr is slow
local keywords = ['true', 'false', 'null', 'yes', 'no', 'on', 'off', 'y', 'n', '~'];

local indicators = std.set(std.stringChars('-?:,[]{}#&*!|>\'"%@` 0123456789'));
local isPlain(s) =
  std.length(s) > 0 && std.length(s) <= 100 && !std.setMember(s[0], indicators)
  && std.length(std.findSubstr(': ', s)) == 0 && std.length(std.findSubstr(' #', s)) == 0
  && count(s, '\t') == 0 && count(s, '\n') == 0
  && !std.endsWith(s, ':') && !std.endsWith(s, ' ') && !std.member(keywords, std.asciiLower(s));

// Greedy word wrap at single spaces, a {{ template action }} kept whole on one line. tailstrict evaluates the
// accumulators at each step; lazily they would nest one thunk per word.
local actions(w) = count(w, '{') - count(w, '}');
// The words, each template action joined into one token.
local tokensFrom(words, i, depth, cur, out) =
  if i == std.length(words) then (if cur == '' then out else out + [cur])
  else
    local w = words[i];
    local joined = if cur == '' then w else cur + ' ' + w;
    local d = depth + actions(w);
    if d > 0 then tokensFrom(words, i + 1, d, joined, out) tailstrict
    else tokensFrom(words, i + 1, 0, '', out + [joined]) tailstrict;
local linesFrom(tokens, i, line, lines, width) =
  if i == std.length(tokens) then lines + [line]
  else
    local t = tokens[i];
    if line != '' && std.length(line) + 1 + std.length(t) > width then linesFrom(tokens, i + 1, t, lines + [line], width) tailstrict
    else linesFrom(tokens, i + 1, if line == '' then t else line + ' ' + t, lines, width) tailstrict;
local wrap(s, width) = linesFrom(tokensFrom(std.split(s, ' '), 0, 0, '', []), 0, '', [], width);

local foldable(s) =  // one line, words separated by single spaces
  std.length(s) > 90 && count(s, '\n') == 0 && !std.member(std.split(s, ' '), '');

// A scalar value after `key: `, its continuation lines indented by `ind`.
local scalar(s, ind) =
  if std.type(s) != 'string' then std.toString(s)
  else if count(s, '\n') > 0 then
    local trailing = std.endsWith(s, '\n') && !std.endsWith(s, '\n\n');
    local body = if trailing then std.substr(s, 0, std.length(s) - 1) else s;
    (if trailing then '|' else '|-') + std.join('', ['\n' + (if l == '' then '' else ind + l) for l in std.split(body, '\n')])
  else if foldable(s) then '>-' + std.join('', ['\n' + ind + l for l in wrap(s, 110 - std.length(ind))])
  else if isPlain(s) then s
  else std.escapeStringJson(s);

local firstKeys = ['summary', 'description', 'runbook_url'];
local mapping(obj, ind) =
  local keys = [k for k in firstKeys if std.objectHas(obj, k)] + [k for k in std.objectFields(obj) if !std.member(firstKeys, k)];
  std.join('', ['\n' + ind + k + ': ' + scalar(obj[k], ind + '  ') for k in keys]);

local ruleKeys = ['alert', 'record', 'expr', 'for', 'keep_firing_for'];

local rule(r) =
  local first = if std.objectHas(r, 'alert') then 'alert' else 'record';
  '\n      - ' + first + ': ' + scalar(r[first], '')
  + std.join('', ['\n        ' + k + ': ' + scalar(r[k], '          ') for k in ruleKeys[2:] if std.objectHas(r, k)])
  + (if std.objectHas(r, 'labels') then '\n        labels:' + mapping(r.labels, '          ') else '')
  + (if std.objectHas(r, 'annotations') then '\n        annotations:' + mapping(r.annotations, '          ') else '');

local group(g) =
  '\n  - name: ' + scalar(g.name, '')
  + (if std.objectHas(g, 'interval') then '\n    interval: ' + g.interval else '')
  + '\n    rules:' + std.join('', [rule(r) for r in g.rules]);

local comment(header) = std.join('', ['# ' + l + '\n' for l in std.split(header, '\n') if l != '']);
local groups(gs) = 'groups:' + std.join('', [group(g) for g in gs]);
// Every line two spaces further in (the rule groups under `spec:`); literal blocks keep their relative indentation.
local indent(text) = std.join('\n', [if l == '' then l else '  ' + l for l in std.split(text, '\n')]);

{
  // A rule file: a comment header (lines without '# ') and the groups.
  ruleFile(header, file)::
    comment(header) + groups(file.groups) + '\n',

  // A prometheus-operator PrometheusRule (monitoring.coreos.com/v1) holding the groups: a comment header, the
  // object's metadata (name, labels) and its spec, the groups as in a rule file.
  prometheusRule(header, name, labels, gs)::
    comment(header)
    + 'apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: ' + scalar(name, '')
    + (if std.length(labels) == 0 then '' else '\n  labels:' + mapping(labels, '    '))
    + '\nspec:\n' + indent(groups(gs)) + '\n',
}
