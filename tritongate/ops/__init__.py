"""Builtin operators: Triton kernels written in this project, with references and inputs."""
