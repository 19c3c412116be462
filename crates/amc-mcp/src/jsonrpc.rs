//! JSON-RPC 2.0 as AMC's MCP servers take it, on HTTP and on the bridge's stdio alike:
//! what a message must be before rmcp reads it, and the error each refusal gets, with AMC's
//! envelope in its `data`.

use serde_json::{Value, json};

/// The body or line is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON that is not a JSON-RPC message AMC takes (or one over the size limit).
pub const INVALID_REQUEST: i64 = -32600;
/// A request whose params rmcp could not read.
pub const INVALID_PARAMS: i64 = -32602;
/// AMC failed, or is stopping.
pub const INTERNAL: i64 = -32603;

/// A JSON-RPC error answering `id`, with `e`'s envelope in `data`.
pub fn error(id: Value, rpc_code: i64, e: &amc_core::Error) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": rpc_code, "message": e.message, "data": e.envelope_json() },
    })
}

/// A JSON-RPC 2.0 request or notification AMC takes: an object with `"jsonrpc": "2.0"`, an
/// id (if any) that is a string or an integer, and a string `method`. (A response is never
/// checked: over HTTP AMC sends no requests, so it takes none, and `amc mcp` answers no
/// response, however wrong.)
pub fn check_message(v: &Value) -> Result<(), &'static str> {
    let Some(obj) = v.as_object() else { return Err("a JSON-RPC message must be an object (batches are not taken)") };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err("\"jsonrpc\" must be \"2.0\"");
    }
    let id_ok = obj.get("id").is_none_or(|id| id.is_string() || id.is_i64() || id.is_u64() || id.is_null());
    if !id_ok {
        return Err("\"id\" must be a string or an integer");
    }
    match obj.get("method") {
        Some(m) if m.is_string() => Ok(()),
        Some(_) => Err("\"method\" must be a string"),
        None if obj.contains_key("result") || obj.contains_key("error") => {
            Err("AMC sends no requests, so it takes no responses: a JSON-RPC request needs a \"method\"")
        }
        None => Err("a JSON-RPC request needs a \"method\""),
    }
}

/// Params that are not an object (MCP names every param), and the params of the requests
/// whose shape rmcp would otherwise take for an unknown method
/// (`-32601`): `tools/call` needs a string `name` and, if any, object `arguments`;
/// `initialize` a string `protocolVersion` and objects `capabilities` and `clientInfo`
/// (with a string `name` and `version`): what rmcp needs to read them, no more.
pub fn check_params(v: &Value) -> Result<(), &'static str> {
    let params = &v["params"];
    // MCP's params are named, never positional.
    if !(params.is_null() || params.is_object()) {
        return Err("params must be an object");
    }
    match v["method"].as_str() {
        Some("tools/call") => {
            if !params["name"].is_string() {
                return Err("tools/call needs params.name, the tool's name as a string");
            }
            if !(params["arguments"].is_null() || params["arguments"].is_object()) {
                return Err("tools/call's params.arguments must be an object");
            }
            Ok(())
        }
        Some("initialize") => {
            let ok = params["protocolVersion"].is_string()
                && params["capabilities"].is_object()
                && params["clientInfo"].is_object()
                && params["clientInfo"]["name"].is_string()
                && params["clientInfo"]["version"].is_string();
            if ok {
                Ok(())
            } else {
                Err("initialize needs params.protocolVersion, capabilities and clientInfo {name, version}")
            }
        }
        _ => Ok(()),
    }
}
