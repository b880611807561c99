-- custom-command.lua: answer the pseudo-query SHOW APP VERSION from the
-- proxy itself, with a one-row result, as a MySQL Proxy read_query script
-- could. Any other statement goes on to the earlier script or the server.
--
-- A query hook may return:
--   nil                                       go on as usual
--   "SQL text"                                run this instead
--   { columns = {...}, rows = {{...}, ...} }  send a result set
--   { affected_rows = n }                     send OK
--   { error = "msg", code = 1105 }            send an error
-- In rows, require("mycached").null is SQL NULL.

local version = "1.4.2"
local built = "2024-06-01"

function query(q, next)
  local sql = q.sql
  -- Cheap length test first: this hook sees every statement.
  if #sql <= 40 then
    local s = sql:gsub("^%s+", ""):gsub("[%s;]+$", ""):gsub("%s+", " "):upper()
    if s == "SHOW APP VERSION" then
      return { columns = { "version", "built" }, rows = { { version, built } } }
    end
  end
  return next(q)
end
