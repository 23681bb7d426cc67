-- Classify every image of the labelled Fashion-MNIST stream with the most
-- accurate variant of `classify` and print the prediction next to the truth.
--
--   tierflow run examples/fashion/classify.sql
CREATE MODEL classify TASK 'image-classification'
  INPUTS (image TENSOR(FLOAT, 1, 28, 28))
  OUTPUTS (label VARCHAR, score FLOAT)
  VARIANTS (
    logreg FROM 'models/logreg.onnx' WITH (accuracy = 84.19),
    mlp_small FROM 'models/mlp-small.onnx' WITH (accuracy = 87.02),
    mlp_large FROM 'models/mlp-large.onnx' WITH (accuracy = 89.45),
    cnn FROM 'models/cnn.onnx' WITH (accuracy = 90.27)
  );

CREATE STREAM shelf (id BIGINT, ts TIMESTAMP, image TENSOR(FLOAT, 1, 28, 28), true_label VARCHAR, true_group VARCHAR)
  FROM FILE 'data/shelf.arrow'
  FORMAT ARROW;

SELECT s.id, s.true_label, c.label, round(c.score, 3) AS score
FROM shelf AS s
CROSS JOIN LATERAL classify(s.image) AS c(label, score);
