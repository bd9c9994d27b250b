#pragma once
// JSON-RPC 2.0's error codes. They live with the tools, not the transport, because a tool's
// ProtocolError and a task's recorded outcome carry them too; the MCP transport adds its own
// (-32020 …) where it answers.
namespace sandgate::server::jsonrpc {

enum ErrorCode : int {
  parse_error = -32700,
  invalid_request = -32600,
  method_not_found = -32601,
  invalid_params = -32602,
  internal_error = -32603,
  server_error = -32000,  // transport-level refusals (no session, limits)
};

}  // namespace sandgate::server::jsonrpc
