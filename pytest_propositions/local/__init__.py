"""The managed local judge: llama.cpp's server in its own interpreter, providing a `Connection`."""
