// Preloaded (node --import) into the conformance runner by test_conformance.c: every HTTP
// request it makes carries "Authorization: Bearer $MCPVISOR_TOKEN". The runner has no
// option for a header, and mcpvisord asks a token of every request on TCP (issue 18); the
// scenarios reach it through fetch() and undici's request(), which both send through
// undici's global dispatcher, replaced here by one that adds the header. That dispatcher
// lives under a well-known global symbol, shared by Node's own fetch and every undici
// copy: this file's undici (the one hoisted in node_modules, the Inspector's) sets it for
// the conformance package's own copy too, whose dns-rebinding scenario would otherwise
// get 401 where it expects 2xx.
import { Agent, setGlobalDispatcher } from "undici";

const value = `Bearer ${process.env.MCPVISOR_TOKEN}`;

function withToken(headers) {
    if (Array.isArray(headers)) // [name, value, name, value, ...] or [[name, value], ...]
        return Array.isArray(headers[0]) ? [...headers, ["authorization", value]] : [...headers, "authorization", value];
    if (headers && typeof headers[Symbol.iterator] === "function")
        return [...headers, ["authorization", value]];
    return { ...(headers ?? {}), authorization: value };
}

class WithToken extends Agent {
    dispatch(opts, handler) {
        return super.dispatch({ ...opts, headers: withToken(opts.headers) }, handler);
    }
}

setGlobalDispatcher(new WithToken());
