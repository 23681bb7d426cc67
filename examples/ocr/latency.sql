-- Scene text under a latency bound (docs/ocr.md, "Under a latency bound"):
-- the planner sends the frames to the detector in the cloud (det-480, for
-- the accuracy); the Jellyfish policy picks a smaller detector side when the
-- edge->cloud link is slow enough that a frame's transfer leaves det-480 too
-- little of the bound.
--
--   tierflow run --replay --link-trace edge:cloud=examples/ocr/link-640k.csv \
--     --catalog examples/ocr/catalog.yaml --infra examples/ocr/infra.yaml examples/ocr/latency.sql
SELECT s.id, d.x0, d.y0, d.x1, d.y1, d.score, r.text, r.confidence
FROM scenes AS s
CROSS JOIN LATERAL detect(s.image) AS d(x0, y0, x1, y1, score)
CROSS JOIN LATERAL recognize(crop_image(s.image, d.x0, d.y0, d.x1, d.y1)) AS r(text, confidence)
WITH (ACCURACY >= 80, LATENCY <= 600 MS);
