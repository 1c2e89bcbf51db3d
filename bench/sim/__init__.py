"""The gate simulation: noise models with structure (process offsets, speed states, steps) and
whole paired runs drawn from them, judged by the shipped rule. Not shipped with the package."""
