-- Blocking JSON-RPC SendMessage with a unique messageId per request. With FILL (environment) the
-- thread stops after that many answers (filling the store to a size); FILL_PREFIX keeps ids apart;
-- AUTHORIZATION is sent as the Authorization header (a bearer token).
local counter = 0
local done = 0
local thread_id = 0
local limit = tonumber(os.getenv("FILL") or "0")
local prefix = os.getenv("FILL_PREFIX") or "b"
function setup(thread)
  thread:set("tid", thread_id)
  thread_id = thread_id + 1
end
function init(args)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["A2A-Version"] = "1.0"
  local authorization = os.getenv("AUTHORIZATION")
  if authorization then
    wrk.headers["Authorization"] = authorization
  end
end
function request()
  counter = counter + 1
  local body = '{"jsonrpc":"2.0","id":' .. counter .. ',"method":"SendMessage","params":{"message":{"messageId":"'
    .. prefix .. '-' .. tostring(tid) .. '-' .. counter .. '","role":"ROLE_USER","parts":[{"text":"hello benchmark"}]}}}'
  return wrk.format(nil, "/", nil, body)
end
function response(status, headers, body)
  done = done + 1
  if limit > 0 and done >= limit then
    wrk.thread:stop()
  end
end
