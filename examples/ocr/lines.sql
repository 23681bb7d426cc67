-- Every text line the pipeline reads, one row each: the DB detector finds the
-- boxes of each scene (its decode step makes one row per box), crop_image
-- cuts each box out of its frame on the worker that holds the frame, and
-- the recogniser reads each crop.
--
--   tierflow run --catalog examples/ocr/catalog.yaml examples/ocr/lines.sql
SELECT
  s.id,
  d.x0,
  d.y0,
  d.x1,
  d.y1,
  round(d.score, 3) AS box_score,
  r.text,
  round(r.confidence, 3) AS confidence
FROM scenes AS s
CROSS JOIN LATERAL detect(s.image) AS d(x0, y0, x1, y1, score)
CROSS JOIN LATERAL recognize(crop_image(s.image, d.x0, d.y0, d.x1, d.y1)) AS r(text, confidence);
