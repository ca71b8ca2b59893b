"""Running a benchmark under OpenCompass: tasks per (model, tier band), the inferencer, resume and cluster checks."""
