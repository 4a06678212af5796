// Preloaded into the MCP conformance runner's Node (`node --require`): the runner has no
// option for a header, and agentweb's /mcp answers 401 without a token. Every request it
// sends (the SDK client's fetch, and undici.request in the DNS-rebinding scenario, which
// sets Host and Origin itself) goes through undici's global dispatcher, which adds
// `Authorization: Bearer $MCP_CONFORMANCE_TOKEN` and changes nothing else.
"use strict";
const { Agent, setGlobalDispatcher } = require("undici");

const authorization = `Bearer ${process.env.MCP_CONFORMANCE_TOKEN}`;

function withToken(headers) {
  if (headers == null) {
    return { authorization };
  }
  if (Array.isArray(headers) || typeof headers[Symbol.iterator] === "function") {
    return [...Array.from(headers).flat(), "authorization", authorization];
  }
  return { ...headers, authorization };
}

const addToken = (dispatch) => (options, handler) =>
  dispatch({ ...options, headers: withToken(options.headers) }, handler);

setGlobalDispatcher(new Agent().compose(addToken));
