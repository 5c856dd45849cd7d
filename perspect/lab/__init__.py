"""Evaluation and training orchestration: what runs the pipeline to measure it or fit its decisions."""
