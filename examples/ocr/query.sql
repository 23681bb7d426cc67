-- Scene text with real-size networks (docs/ocr.md): PaddleOCR's DB text
-- detector finds the text boxes of each scene (its decode step makes one row
-- per box), crop_image cuts each box out of its frame where the frame is, and
-- its CRNN/SVTR recogniser reads each crop. The planner picks a variant of each
-- network (the detector at 320, 480 or 640 pixels, the recogniser at 160 or 320
-- wide) and places them on the infrastructure.
--
--   tierflow run --catalog examples/ocr/catalog.yaml --infra examples/ocr/infra.yaml examples/ocr/query.sql
--
-- A line is "exact" when its text is one of the scene's labelled lines.
SELECT
  s.id,
  d.x0,
  d.y0,
  d.x1,
  d.y1,
  r.text,
  CASE WHEN strpos(' | ' || s.truth || ' | ', ' | ' || r.text || ' | ') > 0 THEN 1 ELSE 0 END AS exact
FROM scenes AS s
CROSS JOIN LATERAL detect(s.image) AS d(x0, y0, x1, y1, score)
CROSS JOIN LATERAL recognize(crop_image(s.image, d.x0, d.y0, d.x1, d.y1)) AS r(text, confidence)
WITH (ACCURACY >= 70);

-- The whole stream: lines read, and the share of them that are a labelled
-- line exactly.
SELECT
  count(*) AS lines,
  sum(CASE WHEN strpos(' | ' || s.truth || ' | ', ' | ' || r.text || ' | ') > 0 THEN 1 ELSE 0 END) AS exact,
  round(avg(CASE WHEN strpos(' | ' || s.truth || ' | ', ' | ' || r.text || ' | ') > 0 THEN 1.0 ELSE 0.0 END), 4) AS exact_share
FROM scenes AS s
CROSS JOIN LATERAL detect(s.image) AS d(x0, y0, x1, y1, score)
CROSS JOIN LATERAL recognize(crop_image(s.image, d.x0, d.y0, d.x1, d.y1)) AS r(text, confidence)
WITH (ACCURACY >= 70);
