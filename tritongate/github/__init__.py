"""Talking to GitHub from CI: a stdlib REST client (``rest``) and the sticky verdict comment
(``comment``). Standard library only (no torch, triton, pandas or rich anywhere in the
import chain): the commenting job runs on a bare GitHub-hosted runner."""
