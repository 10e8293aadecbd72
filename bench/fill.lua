-- Blocking JSON-RPC SendMessage with unique messageIds, stopping after FILL requests (environment).
local counter = 0
local done = 0
local limit = tonumber(os.getenv("FILL") or "1000")
local prefix = os.getenv("FILL_PREFIX") or "fill"
function init(args)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["A2A-Version"] = "1.0"
end
function request()
  counter = counter + 1
  local body = '{"jsonrpc":"2.0","id":' .. counter .. ',"method":"SendMessage","params":{"message":{"messageId":"'
    .. prefix .. '-' .. counter .. '","role":"ROLE_USER","parts":[{"text":"fill"}]}}}'
  return wrk.format(nil, "/", nil, body)
end
function response(status, headers, body)
  done = done + 1
  if done >= limit then
    wrk.thread:stop()
  end
end
