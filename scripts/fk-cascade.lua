-- fk-cascade.lua: when a parent table is written, also invalidate the
-- tables whose foreign keys cascade from it (ON DELETE / ON UPDATE
-- CASCADE, SET NULL or SET DEFAULT change the child rows without a
-- statement naming the child, so the proxy cannot see those writes).
--
-- Scripts cannot query MySQL, so the foreign-key graph is read once, when
-- the script starts, from one of two places:
--
--   1. the kv key "fkgraph", if set: store it from any SQL client through
--      mycached with  INSERT "fkgraph" = "<pairs>";  and reload the policy;
--   2. otherwise the `graph` text below, pasted into this file.
--
-- Both hold "parent child" pairs of "db.table" names, separated by white
-- space (one pair per line reads best). This query, run against MariaDB or
-- MySQL, prints that text on one line:
--
--   SELECT GROUP_CONCAT(CONCAT(rc.UNIQUE_CONSTRAINT_SCHEMA, '.',
--            rc.REFERENCED_TABLE_NAME, ' ', rc.CONSTRAINT_SCHEMA, '.',
--            rc.TABLE_NAME) SEPARATOR ' ')
--   FROM information_schema.REFERENTIAL_CONSTRAINTS rc
--   WHERE rc.DELETE_RULE <> 'RESTRICT' AND rc.DELETE_RULE <> 'NO ACTION'
--      OR rc.UPDATE_RULE <> 'RESTRICT' AND rc.UPDATE_RULE <> 'NO ACTION';
--
-- (Add SET SESSION group_concat_max_len = 1048576 first for large schemas.)
-- Cascades chain: a write to a grandparent invalidates grandchildren too.

local mc = require("mycached")

local graph = [[
shop.customers shop.orders
shop.orders shop.order_items
]]

local children = {}

local function parse(text)
  local g = {}
  for parent, child in string.gmatch(text, "(%S+)%s+(%S+)") do
    local list = g[parent]
    if list == nil then
      list = {}
      g[parent] = list
    end
    list[#list + 1] = child
  end
  return g
end

do
  local text = mc.cache.get("fkgraph")
  if text ~= nil and text ~= "" then
    graph = text
    mc.log.info("fk-cascade: graph read from kv key fkgraph")
  end
  children = parse(graph)
end

-- Only statements that can change or remove parent rows cascade.
local cascades = { update = true, delete = true, replace = true }

function invalidate(w, next)
  local extra = next(w) or {}
  if not cascades[w.kind] then
    return extra
  end
  local seen, queue = {}, {}
  for _, t in ipairs(w.tables) do
    seen[t] = true
    queue[#queue + 1] = t
  end
  local i = 1
  while i <= #queue do
    for _, c in ipairs(children[queue[i]] or {}) do
      if not seen[c] then
        seen[c] = true
        queue[#queue + 1] = c
        extra[#extra + 1] = c
      end
    end
    i = i + 1
  end
  return extra
end
