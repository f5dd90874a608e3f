// Streams a chat and a completion from `infer serve` at the base URL given
// as the first argument, with the official openai npm client, and prints
// what it read as one JSON object: cmd/infer's TestServeNodeClient checks
// it against the server's whole (non-streamed) answers.
//
//   cd scripts/openai-node && npm ci && node stream.mjs http://127.0.0.1:8080
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.argv[2] + "/v1", apiKey: "none", maxRetries: 0 });

const chat = { text: "", chunks: 0, role: "", ids: new Set(), finish: "", usage: null };
const chatStream = await client.chat.completions.create({
  model: "stories260K",
  messages: [{ role: "user", content: "Tell me a story" }],
  max_tokens: 16,
  temperature: 0,
  stream: true,
  stream_options: { include_usage: true },
});
for await (const chunk of chatStream) {
  chat.chunks++;
  chat.ids.add(chunk.id);
  if (chunk.usage) chat.usage = chunk.usage;
  for (const c of chunk.choices) {
    if (c.delta.role) chat.role = c.delta.role;
    chat.text += c.delta.content ?? "";
    if (c.finish_reason) chat.finish = c.finish_reason;
  }
}

const completion = { text: "", finish: "" };
const textStream = await client.completions.create({
  model: "stories260K",
  prompt: "Once upon a time",
  max_tokens: 16,
  temperature: 0,
  stream: true,
});
for await (const chunk of textStream) {
  for (const c of chunk.choices) {
    completion.text += c.text;
    if (c.finish_reason) completion.finish = c.finish_reason;
  }
}

console.log(JSON.stringify({
  chat: { text: chat.text, role: chat.role, ids: chat.ids.size, finish: chat.finish, usage: chat.usage },
  completion,
}));
