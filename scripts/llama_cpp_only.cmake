# `make install` builds llama-cpp-python with -DCMAKE_PROJECT_llama.cpp_INCLUDE=<this file>, so CMake
# includes it right after llama.cpp's own project() call, before llama.cpp reads its options.
#
# llama-cpp-python forces LLAMA_BUILD_COMMON=ON (with FORCE, so a plain -D cannot turn it off), but its
# Python bindings load only libllama and libggml*: nestor never uses llama.cpp's "common" library
# (command-line argument parsing, chat-format parsers, a downloader with an embedded HTTPS client):
# 53 of the 178 files a default build compiles, among them the slowest one. Grammar-constrained
# sampling and saving/restoring the state are in libllama itself; nestor renders chat templates in
# Python.
set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama: build common utils library" FORCE)
message(STATUS "nestor: building only libllama and libggml (LLAMA_BUILD_COMMON=OFF)")
