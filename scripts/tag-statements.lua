-- tag-statements.lua: prepend a comment tag to every statement, so that the
-- server's process list, slow log and performance_schema show which
-- application sent it. The query hook runs before anything else; returning
-- a string makes mycached run that text instead.
--
-- The tag names the application and the database user. The comment goes
-- first so that MariaDB keeps it in the slow log and SHOW PROCESSLIST.
-- Statements tagged by an earlier script (next returned a string) are
-- tagged on top; results from an earlier script pass through untouched.

local app = "shop"

function query(q, next)
  local r = next(q)
  if type(r) == "table" then
    return r
  end
  local sql = r or q.sql
  return "/* app=" .. app .. " user=" .. q.user .. " */ " .. sql
end
