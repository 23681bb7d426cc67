-- The continuous-integration case of the scene-text workflow (examples/ocr,
-- docs/ocr.md): the first four scenes only, every line read.
--
--   tierflow run --catalog examples/ocr/catalog.yaml examples/ocr/ci.sql
SELECT s.id, d.x0, d.y0, d.x1, d.y1, d.score, r.text, r.confidence
FROM scenes AS s
CROSS JOIN LATERAL detect(s.image) AS d(x0, y0, x1, y1, score)
CROSS JOIN LATERAL recognize(crop_image(s.image, d.x0, d.y0, d.x1, d.y1)) AS r(text, confidence)
WHERE s.id < 4;
