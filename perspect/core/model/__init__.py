"""The model bundle's format and runtime (bundle entries, ONNX Runtime sessions, `tokenizers`
tokenization) and the decisions fitted beside a model (cuts and their logistic stacks)."""
