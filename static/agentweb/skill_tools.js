// The skill form's tools field: says what is wrong as the author types (the JSON, the list,
// each tool's name, keys and executor kind: the rules the field's data attributes carry
// from the server's own), and inserts the example tool. Saving checks everything again,
// schemas, executors and templates included; a refused save changes nothing.
(function () {
  "use strict";

  const area = document.getElementById("id_tools");
  const said = document.getElementById("id_tools_check");
  const insert = document.getElementById("insert-example-tool");
  const example = document.getElementById("example-tool");
  if (!area || !said) return;

  const keys = new Set(area.dataset.toolKeys.split(" "));
  const kinds = area.dataset.executorKinds.split(" ");
  const toolName = new RegExp(area.dataset.toolName);
  let timer = null;

  function where(text, error) {
    // "… at position 42" (older engines) → line and column; newer ones say them already.
    const at = /position (\d+)/.exec(error.message);
    if (!at) return error.message;
    const before = text.slice(0, Number(at[1])).split("\n");
    return error.message + " (line " + before.length + ", column " +
      (before[before.length - 1].length + 1) + ")";
  }

  function isObject(value) {
    return value !== null && typeof value === "object" && !Array.isArray(value);
  }

  function toolProblem(tool, at) {
    if (!isObject(tool)) return at + ": a tool must be a JSON object { … }";
    const unknown = Object.keys(tool).filter((key) => !keys.has(key));
    if (unknown.length) {
      return at + ": unknown key '" + unknown[0] + "'; accepted: " + Array.from(keys).join(", ");
    }
    if (typeof tool.name !== "string" || !tool.name) return at + ".name: is required";
    if (!toolName.test(tool.name)) {
      return at + ".name: start with a letter; letters, digits, _ and - only (at most 64)";
    }
    const schema = tool.inputSchema;
    if (schema !== undefined && !isObject(schema)) {
      return at + ".inputSchema: must be a JSON object (a JSON Schema)";
    }
    if (schema && schema.type !== undefined && schema.type !== "object") {
      return at + '.inputSchema: must describe an object of named arguments ("type": "object")';
    }
    const executor = tool.executor;
    if (executor !== undefined && !isObject(executor)) {
      return at + ".executor: must be a JSON object with a `kind`";
    }
    if (executor && Object.keys(executor).length && !kinds.includes(executor.kind)) {
      return at + ".executor: `kind` must be one of " + kinds.join(", ");
    }
    return "";
  }

  function problem(text) {
    if (!text.trim()) return { ok: "No tools." };
    let tools;
    try {
      tools = JSON.parse(text);
    } catch (error) {
      return { wrong: "Not valid JSON: " + where(text, error) };
    }
    if (!Array.isArray(tools)) return { wrong: "tools must be a JSON list [ … ] of tools" };
    const seen = new Set();
    for (let i = 0; i < tools.length; i++) {
      const wrong = toolProblem(tools[i], "tools[" + i + "]");
      if (wrong) return { wrong: wrong };
      if (seen.has(tools[i].name)) {
        return { wrong: "tools[" + i + "].name: '" + tools[i].name + "' is used by two tools" };
      }
      seen.add(tools[i].name);
    }
    const names = tools.map((tool) => tool.name).join(", ");
    return { ok: tools.length + " tool(s)" + (names ? ": " + names : "") +
      ". Saving checks the schemas, executors and templates too." };
  }

  function check() {
    const found = problem(area.value);
    said.textContent = found.wrong || found.ok;
    said.classList.toggle("error", Boolean(found.wrong));
    area.setAttribute("aria-invalid", found.wrong ? "true" : "false");
    return found;
  }

  area.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(check, 250);
  });

  if (insert && example) {
    insert.hidden = false;
    insert.addEventListener("click", function () {
      const tools = area.value.trim() ? tryParse(area.value) : [];
      if (!Array.isArray(tools)) {
        said.textContent = "Fix the list first: the example goes at its end.";
        said.classList.add("error");
        return;
      }
      tools.push(JSON.parse(example.textContent));
      area.value = JSON.stringify(tools, null, 2);
      check();
      area.focus();
    });
  }

  function tryParse(text) {
    try { return JSON.parse(text); } catch (error) { return null; }
  }

  if (area.value.trim() && area.value.trim() !== "[]") check();
})();
