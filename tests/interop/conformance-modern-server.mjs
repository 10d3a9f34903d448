// A modern-only stdio MCP server (2026-07-28, the TypeScript SDK 2.x's McpServer) with the one
// tool of @modelcontextprotocol/conformance-next's input-required-result-* scenarios that only
// a server naming its own input keys can pass: test_input_required_result_elicitation, whose
// input_required result must ask under the key "user_name" (basic-elicitation), and which must
// take "user_name" on a first call that carries no requestState (ignore-extra-params).
// test_interop.c's conformance_modern runs it behind mcpvisord beside the legacy fixture
// conformance-server.mjs, which leaves that tool to it ("excludeTools"): the daemon passes its
// input_required on to the modern client, the requestState sealed by the daemon.
import { McpServer, fromJsonSchema, inputRequired, acceptedContent } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";

function makeServer() {
    const server = new McpServer({ name: "conformance-modern-server", version: "1.0.0" },
        { supportedProtocolVersions: ["2026-07-28"] });
    server.registerTool("test_input_required_result_elicitation",
        { description: "Asks the user's name (the modern way), then greets them", inputSchema: fromJsonSchema({ type: "object", properties: {} }) },
        async (_args, ctx) => {
            // Anything but an accepted answer with a name (none, another key, a number) is
            // asked again, as the specification recommends for a missing input response.
            let answer;
            try {
                answer = acceptedContent(ctx.mcpReq.inputResponses, "user_name");
            } catch {
                answer = undefined;
            }
            if (typeof answer?.name === "string")
                return { content: [{ type: "text", text: `Hello, ${answer.name}!` }] };
            return inputRequired({
                inputRequests: {
                    user_name: inputRequired.elicit({
                        message: "What is your name?",
                        requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
                    }),
                },
            });
        });
    return server;
}

serveStdio(makeServer, { legacy: "reject" });
