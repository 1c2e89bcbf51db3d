# Sourced by the ci/*.sh step scripts: `out NAME VALUE` appends one step output to
# $GITHUB_OUTPUT (printed when the variable is unset, for a run by hand), with the contract of
# tritongate/github/outputs.py: a name GitHub can read as steps.<id>.outputs.<name>, and a
# value without a line break (the rest of it would be read as a line of its own: another
# output, chosen by whoever wrote the value). A refused output writes nothing and fails the step.
out() {
  local name="$1" value="$2"
  if [[ ! "$name" =~ ^[A-Za-z_][A-Za-z0-9_-]*$ ]]; then
    echo "::error title=step output::'$name' is not a step output name" >&2
    return 2
  fi
  if [[ "$value" == *$'\n'* || "$value" == *$'\r'* ]]; then
    echo "::error title=step output::the value of $name holds a line break; refused (it would be read as another output)" >&2
    return 2
  fi
  if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
    printf '%s=%s\n' "$name" "$value" >> "$GITHUB_OUTPUT"
  else
    printf '%s=%s\n' "$name" "$value"
  fi
}
