-- The example agent called directly: a run request of the HTTP agent contract (docs/agent-http.md).
function init(args)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.body = '{"contract":"a2a-serverless/agent-http/1","kind":"run","run":{"id":"bench/0","attempt":1},'
    .. '"taskId":"bench","contextId":"c","isNewTask":true,'
    .. '"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hello benchmark"}]},'
    .. '"task":{"id":"bench","contextId":"c","status":{"state":"TASK_STATE_SUBMITTED"}},'
    .. '"principal":{"id":"anonymous","authenticated":false},"extensions":[]}'
end
