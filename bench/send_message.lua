-- Blocking JSON-RPC SendMessage with a unique messageId per request.
local counter = 0
local thread_id = 0
function setup(thread)
  thread:set("tid", thread_id)
  thread_id = thread_id + 1
end
function init(args)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["A2A-Version"] = "1.0"
end
function request()
  counter = counter + 1
  local body = '{"jsonrpc":"2.0","id":' .. counter .. ',"method":"SendMessage","params":{"message":{"messageId":"b-'
    .. tostring(tid) .. '-' .. counter .. '","role":"ROLE_USER","parts":[{"text":"hello benchmark"}]}}}'
  return wrk.format(nil, "/", nil, body)
end
