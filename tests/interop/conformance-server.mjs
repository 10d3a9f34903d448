// A stdio MCP server with what the server scenarios of @modelcontextprotocol/conformance
// call (their descriptions say what each expects), run by mcpvisord behind its HTTP front
// door for test_conformance.c. Exposed with "prefix": "" so that its names are the ones the
// scenarios use. Written with the TypeScript SDK's low-level Server, so that schemas and
// results go out exactly as written here.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
    CallToolRequestSchema, CompleteRequestSchema, GetPromptRequestSchema, ListPromptsRequestSchema,
    ListResourcesRequestSchema, ListResourceTemplatesRequestSchema, ListToolsRequestSchema, ReadResourceRequestSchema,
    SubscribeRequestSchema, UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

// A 1x1 red PNG, and a WAV header with no samples: the smallest valid ones.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV = Buffer.from("RIFF$\0\0\0WAVEfmt \x10\0\0\0\x01\0\x01\0\x40\x1f\0\0\x80\x3e\0\0\x02\0\x10\0data\0\0\0\0", "latin1")
    .toString("base64");
const text = (t) => ({ type: "text", text: t });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const noArgs = { type: "object", properties: {} };

const server = new Server({ name: "mcpvisor-conformance-fixture", version: "1.0.0" }, {
    capabilities: { tools: { listChanged: true }, resources: { subscribe: true }, prompts: { listChanged: true }, logging: {},
        completions: {} },
});

const askCapital = () => server.createMessage({ messages: [{ role: "user", content: text("What is the capital of France?") }],
    maxTokens: 100 });
const confirm = () => server.elicitInput({ message: "Please confirm", requestedSchema: { type: "object",
    properties: { ok: { type: "boolean" } }, required: ["ok"] } });

const tools = [
    { name: "test_simple_text", description: "Returns simple text", inputSchema: noArgs,
        call: () => ({ content: [text("This is a simple text response for testing.")] }) },
    { name: "test_image_content", description: "Returns an image", inputSchema: noArgs,
        call: () => ({ content: [{ type: "image", data: PNG, mimeType: "image/png" }] }) },
    { name: "test_audio_content", description: "Returns audio", inputSchema: noArgs,
        call: () => ({ content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }] }) },
    { name: "test_embedded_resource", description: "Returns an embedded resource", inputSchema: noArgs,
        call: () => ({ content: [{ type: "resource", resource: { uri: "test://embedded-resource", mimeType: "text/plain",
            text: "This is an embedded resource content." } }] }) },
    { name: "test_multiple_content_types", description: "Returns text, an image and a resource", inputSchema: noArgs,
        call: () => ({ content: [text("Multiple content types test:"), { type: "image", data: PNG, mimeType: "image/png" },
            { type: "resource", resource: { uri: "test://mixed-content-resource", mimeType: "application/json",
                text: JSON.stringify({ test: "data", value: 123 }) } }] }) },
    { name: "test_tool_with_logging", description: "Sends three log messages while it runs", inputSchema: noArgs,
        call: async () => {
            for (const [i, data] of ["Tool execution started", "Tool processing data", "Tool execution completed"].entries()) {
                if (i)
                    await sleep(50);
                await server.sendLoggingMessage({ level: "info", data });
            }
            return { content: [text("Logging tool completed")] };
        } },
    { name: "test_error_handling", description: "Always fails", inputSchema: noArgs,
        call: () => ({ isError: true, content: [text("This tool intentionally returns an error for testing")] }) },
    { name: "test_tool_with_progress", description: "Reports progress 0, 50, 100 of 100", inputSchema: noArgs,
        call: async (args, extra) => {
            const token = extra._meta?.progressToken;
            for (const progress of [0, 50, 100]) {
                if (token !== undefined)
                    await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress, total: 100 } });
                if (progress < 100)
                    await sleep(50);
            }
            return { content: [text("Progress tool completed")] };
        } },
    { name: "test_sampling", description: "Asks the client's LLM",
        inputSchema: { type: "object", properties: { prompt: { type: "string" } }, required: ["prompt"] },
        call: async (args) => {
            const r = await server.createMessage({ messages: [{ role: "user", content: text(args.prompt) }], maxTokens: 100 });
            return { content: [text(`LLM response: ${r.content?.text ?? JSON.stringify(r.content)}`)] };
        } },
    { name: "test_elicitation", description: "Asks the user",
        inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
        call: async (args) => {
            const r = await server.elicitInput({ message: args.message, requestedSchema: { type: "object", properties: {
                username: { type: "string", description: "User's response" },
                email: { type: "string", description: "User's email address" } }, required: ["username", "email"] } });
            return { content: [text(`User response: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`)] };
        } },
    { name: "test_elicitation_sep1034_defaults", description: "Asks the user, with defaults for every primitive type",
        inputSchema: noArgs,
        call: async () => {
            const r = await server.elicitInput({ message: "Please review your details", requestedSchema: { type: "object", properties: {
                name: { type: "string", default: "John Doe" },
                age: { type: "integer", default: 30 },
                score: { type: "number", default: 95.5 },
                status: { type: "string", enum: ["active", "inactive", "pending"], default: "active" },
                verified: { type: "boolean", default: true } } } });
            return { content: [text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`)] };
        } },
    { name: "test_elicitation_sep1330_enums", description: "Asks the user, with the five kinds of enum", inputSchema: noArgs,
        call: async () => {
            const r = await server.elicitInput({ message: "Pick options", requestedSchema: { type: "object", properties: {
                untitledSingle: { type: "string", enum: ["option1", "option2", "option3"] },
                titledSingle: { type: "string", oneOf: [{ const: "value1", title: "First Option" },
                    { const: "value2", title: "Second Option" }, { const: "value3", title: "Third Option" }] },
                legacyEnum: { type: "string", enum: ["opt1", "opt2", "opt3"], enumNames: ["Option One", "Option Two", "Option Three"] },
                untitledMulti: { type: "array", items: { type: "string", enum: ["option1", "option2", "option3"] } },
                titledMulti: { type: "array", items: { anyOf: [{ const: "value1", title: "First Choice" },
                    { const: "value2", title: "Second Choice" }, { const: "value3", title: "Third Choice" }] } } } } });
            return { content: [text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`)] };
        } },
    // The diagnostic hooks of the 2026-07-28 requirements (server-stateless), written the
    // legacy way: what the daemon makes of them for a modern client is what is tested.
    { name: "test_logging_tool", description: "Sends a log message while it runs", inputSchema: noArgs,
        call: async () => {
            await server.sendLoggingMessage({ level: "info", data: "Logging tool ran" });
            return { content: [text("Logging tool completed")] };
        } },
    // server-stateless calls it declaring no capability and expects -32021 naming sampling
    { name: "test_missing_capability", description: "Needs the client's sampling capability", inputSchema: noArgs,
        call: async () => {
            const r = await server.createMessage({ messages: [{ role: "user", content: text("Say yes") }], maxTokens: 10 });
            return { content: [text(`model=${r.model}`)] };
        } },
    { name: "test_streaming_elicitation", description: "Asks the user while it runs", inputSchema: noArgs,
        call: async () => {
            const r = await server.elicitInput({ message: "Confirm", requestedSchema: { type: "object", properties: {} } });
            return { content: [text(`action=${r.action}`)] };
        } },
    // The input-required-result-* scenarios (MRTR, SEP-2322) of the 2026-07-28 requirements,
    // written the legacy way: each asks during the call (elicitation/create,
    // sampling/createMessage, roots/list), and the daemon turns what it asks into the
    // input_required result and the retry into the answers. The keys of inputRequests are
    // the daemon's, not the ones the scenarios suggest: test_interop.c's conformance_modern
    // leaves test_input_required_result_elicitation, whose scenarios want the key
    // "user_name", to conformance-modern-server.mjs ("excludeTools").
    { name: "test_input_required_result_elicitation", description: "Asks the user's name", inputSchema: noArgs,
        call: async () => {
            const r = await server.elicitInput({ message: "What is your name?", requestedSchema: { type: "object",
                properties: { name: { type: "string" } }, required: ["name"] } });
            return { content: [text(`Hello, ${r.content?.name ?? "nobody"}!`)] };
        } },
    { name: "test_input_required_result_sampling", description: "Asks the client's LLM a question", inputSchema: noArgs,
        call: async () => {
            const r = await askCapital();
            return { content: [text(`LLM response: ${r.content?.text ?? JSON.stringify(r.content)}`)] };
        } },
    { name: "test_input_required_result_list_roots", description: "Asks the client's roots", inputSchema: noArgs,
        call: async () => {
            const r = await server.listRoots();
            return { content: [text(`Roots: ${r.roots.map((x) => x.uri).join(", ")}`)] };
        } },
    { name: "test_input_required_result_request_state", description: "Asks for a confirmation", inputSchema: noArgs,
        call: async () => {
            const r = await confirm();
            return { content: [text(`state-ok: ok=${r.content?.ok}`)] };
        } },
    { name: "test_input_required_result_tampered_state", description: "Asks for a confirmation", inputSchema: noArgs,
        call: async () => {
            const r = await confirm();
            return { content: [text(`confirmed: ok=${r.content?.ok}`)] };
        } },
    { name: "test_input_required_result_multiple_inputs", description: "Asks the user, the LLM and the roots at once",
        inputSchema: noArgs,
        call: async () => {
            const [name, greeting, roots] = await Promise.all([
                server.elicitInput({ message: "What is your name?", requestedSchema: { type: "object",
                    properties: { name: { type: "string" } }, required: ["name"] } }),
                server.createMessage({ messages: [{ role: "user", content: text("Generate a greeting") }], maxTokens: 50 }),
                server.listRoots()]);
            return { content: [text(`name=${name.content?.name}, greeting=${greeting.content?.text}, roots=${roots.roots.length}`)] };
        } },
    { name: "test_input_required_result_multi_round", description: "Asks the user twice, one question after the other",
        inputSchema: noArgs,
        call: async () => {
            const a = await server.elicitInput({ message: "Step 1: What is your name?", requestedSchema: { type: "object",
                properties: { name: { type: "string" } }, required: ["name"] } });
            const b = await server.elicitInput({ message: "Step 2: What is your favorite color?", requestedSchema: {
                type: "object", properties: { color: { type: "string" } }, required: ["color"] } });
            return { content: [text(`${a.content?.name} likes ${b.content?.color}`)] };
        } },
    // Asks only what a client without elicitation can give: a legacy server does not see the
    // call's own capabilities, and the daemon answers a request the call did not declare
    // with -32021 for the whole call (server-stateless's test_missing_capability).
    { name: "test_input_required_result_capabilities", description: "Asks the client's LLM", inputSchema: noArgs,
        call: async () => {
            const r = await askCapital();
            return { content: [text(`LLM response: ${r.content?.text ?? JSON.stringify(r.content)}`)] };
        } },
    { name: "test_trigger_tool_change", description: "Adds a tool and says the list changed", inputSchema: noArgs,
        call: async () => {
            tools.push({ name: `test_dynamic_tool_${tools.length}`, description: "Added by test_trigger_tool_change",
                inputSchema: noArgs, call: () => ({ content: [text("dynamic")] }) });
            await server.sendToolListChanged();
            return { content: [text("tool list changed")] };
        } },
    { name: "test_trigger_prompt_change", description: "Adds a prompt and says the list changed", inputSchema: noArgs,
        call: async () => {
            prompts.push({ name: `test_dynamic_prompt_${prompts.length}`, description: "Added by test_trigger_prompt_change",
                get: () => [{ role: "user", content: text("dynamic") }] });
            await server.sendPromptListChanged();
            return { content: [text("prompt list changed")] };
        } },
    { name: "json_schema_2020_12_tool", description: "Tool with JSON Schema 2020-12 features",
        inputSchema: { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object",
            $defs: { address: { type: "object", properties: { street: { type: "string" }, city: { type: "string" } } } },
            properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" } }, additionalProperties: false },
        call: () => ({ content: [text("ok")] }) },
];

const resources = [
    { uri: "test://static-text", name: "static-text", description: "A static text resource", mimeType: "text/plain",
        read: () => ({ text: "This is the content of the static text resource." }) },
    { uri: "test://static-binary", name: "static-binary", description: "A static binary resource", mimeType: "image/png",
        read: () => ({ blob: PNG }) },
    { uri: "test://watched-resource", name: "watched-resource", description: "A resource to subscribe to", mimeType: "text/plain",
        read: () => ({ text: "Watched resource content." }) },
];
const TEMPLATE = /^test:\/\/template\/([^/]+)\/data$/;

const prompts = [
    { name: "test_simple_prompt", description: "A prompt without arguments",
        get: () => [{ role: "user", content: text("This is a simple prompt for testing.") }] },
    { name: "test_prompt_with_arguments", description: "A prompt with two arguments",
        arguments: [{ name: "arg1", description: "First test argument", required: true },
            { name: "arg2", description: "Second test argument", required: true }],
        get: (a) => [{ role: "user", content: text(`Prompt with arguments: arg1='${a.arg1}', arg2='${a.arg2}'`) }] },
    { name: "test_prompt_with_embedded_resource", description: "A prompt with an embedded resource",
        arguments: [{ name: "resourceUri", description: "URI of the resource to embed", required: true }],
        get: (a) => [{ role: "user", content: { type: "resource", resource: { uri: a.resourceUri, mimeType: "text/plain",
            text: "Embedded resource content for testing." } } },
        { role: "user", content: text("Please process the embedded resource above.") }] },
    // input-required-result-non-tool-request: a prompt that asks the user while it is got
    { name: "test_input_required_result_prompt", description: "A prompt that asks the user for its context",
        get: async () => {
            const r = await server.elicitInput({ message: "What context should the prompt use?", requestedSchema: {
                type: "object", properties: { context: { type: "string" } }, required: ["context"] } });
            return [{ role: "user", content: text(`Context: ${r.content?.context}`) }];
        } },
    { name: "test_prompt_with_image", description: "A prompt with an image",
        get: () => [{ role: "user", content: { type: "image", data: PNG, mimeType: "image/png" } },
            { role: "user", content: text("Please analyze the image above.") }] },
];

const strip = ({ call, read, get, ...rest }) => rest;
server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: tools.map(strip) }));
server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const tool = tools.find((t) => t.name === req.params.name);
    if (!tool)
        return { isError: true, content: [text(`unknown tool ${req.params.name}`)] };
    return tool.call(req.params.arguments ?? {}, { ...extra, _meta: req.params._meta });
});
server.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: resources.map(strip) }));
server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: [
    { uriTemplate: "test://template/{id}/data", name: "template", description: "Data by id", mimeType: "application/json" }] }));
server.setRequestHandler(ReadResourceRequestSchema, (req) => {
    const { uri } = req.params, r = resources.find((x) => x.uri === uri), m = TEMPLATE.exec(uri);
    if (r)
        return { contents: [{ uri, mimeType: r.mimeType, ...r.read() }] };
    if (m)
        return { contents: [{ uri, mimeType: "application/json",
            text: JSON.stringify({ id: m[1], templateTest: true, data: `Data for ID: ${m[1]}` }) }] };
    throw new Error(`no resource ${uri}`);
});
server.setRequestHandler(SubscribeRequestSchema, () => ({}));
server.setRequestHandler(UnsubscribeRequestSchema, () => ({}));
server.setRequestHandler(ListPromptsRequestSchema, () => ({ prompts: prompts.map(strip) }));
server.setRequestHandler(GetPromptRequestSchema, async (req) => {
    const p = prompts.find((x) => x.name === req.params.name);
    if (!p)
        throw new Error(`no prompt ${req.params.name}`);
    return { messages: await p.get(req.params.arguments ?? {}) };
});
server.setRequestHandler(CompleteRequestSchema, (req) => {
    const words = ["paris", "park", "party"].filter((w) => w.startsWith(req.params.argument?.value ?? ""));
    return { completion: { values: words, total: words.length, hasMore: false } };
});

await server.connect(new StdioServerTransport());
