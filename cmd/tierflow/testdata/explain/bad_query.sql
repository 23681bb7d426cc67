-- Every problem is reported at once, each at its token.
SELECT i.request_id, a.answer, nosuch
FROM ReadImage AS i
CROSS JOIN LATERAL VQAA(i.image) AS a(answer)
WHERE i.request_id > 'x';
SELECT request_id FROM ReadImag;
