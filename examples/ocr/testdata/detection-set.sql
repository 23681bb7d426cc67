-- Per scene, one row per text box as a detection set (box tensor, crop
-- tensor, score), then a second network per box on its crop; scenes 0 and 2
-- (five text lines), to keep the test short.
SELECT s.id, d.box, d.crop, d.score, p.text_map
FROM scenes AS s
CROSS JOIN LATERAL detect(s.image) AS d(box, crop, score)
CROSS JOIN LATERAL patch(d.crop) AS p(text_map)
WHERE s.id = 0 OR s.id = 2;
